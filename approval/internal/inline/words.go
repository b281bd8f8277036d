package inline

// group is a family of names that make code not quiet; its format turns
// the name seen into the reason given.
type group uint8

const (
	gProcess group = iota + 1
	gFiles
	gWriter
	gNet
	gCode
	gEscape
	gDestroy
)

// formats are the reasons, one per group; %s is the name as written,
// with its receiver when it has one (os.system).
var formats = [...]string{
	gProcess: "calls %s",
	gFiles:   "changes files (%s)",
	gWriter:  "writes a file (%s)",
	gNet:     "uses the network (%s)",
	gCode:    "builds code at run time (%s)",
	gEscape:  "reaches around the judge (%s)",
	gDestroy: "names a destructive operation (%s)",
}

// words maps a lower-cased name, or a lower-cased part of one split at _
// and camelCase, to its group. It is read-only after initialisation.
var words = map[string]group{
	// processes
	"system": gProcess, "popen": gProcess, "spawn": gProcess, "spawnsync": gProcess,
	"fork": gProcess, "forkpty": gProcess, "kill": gProcess, "killpg": gProcess,
	"terminate": gProcess, "subprocess": gProcess, "pty": gProcess, "openpty": gProcess,
	"startfile": gProcess, "check_output": gProcess, "check_call": gProcess,
	"child_process": gProcess, "posix_spawn": gProcess, "posix_spawnp": gProcess,
	"signal": gProcess, "processpoolexecutor": gProcess, "multiprocessing": gProcess,
	"getoutput": gProcess, "getstatusoutput": gProcess, "pexpect": gProcess,
	"execa": gProcess, "shelljs": gProcess,

	// file mutation
	"rm": gFiles, "rmdir": gFiles, "rmtree": gFiles, "rmsync": gFiles, "unlink": gFiles,
	"unlinksync": gFiles, "remove": gFiles, "removedirs": gFiles, "delete": gFiles,
	"truncate": gFiles, "ftruncate": gFiles, "write": gFiles, "writelines": gFiles,
	"writefile": gFiles, "writefilesync": gFiles, "appendfile": gFiles,
	"appendfilesync": gFiles, "rename": gFiles, "renames": gFiles, "renamesync": gFiles,
	"move": gFiles, "chmod": gFiles, "lchmod": gFiles, "fchmod": gFiles, "chown": gFiles,
	"lchown": gFiles, "fchown": gFiles, "link": gFiles, "symlink": gFiles,
	"symlink_to": gFiles, "hardlink_to": gFiles, "link_to": gFiles, "mkdir": gFiles,
	"makedirs": gFiles, "mkdirsync": gFiles, "mkdtemp": gFiles, "mkdtempsync": gFiles,
	"mkstemp": gFiles, "mktemp": gFiles, "touch": gFiles, "copyfile": gFiles,
	"copyfilesync": gFiles, "copytree": gFiles, "copy2": gFiles, "copymode": gFiles,
	"copystat": gFiles, "cp": gFiles, "cpsync": gFiles, "utime": gFiles, "utimes": gFiles,
	"utimessync": gFiles, "futimes": gFiles, "lutimes": gFiles, "mkfifo": gFiles,
	"mknod": gFiles, "pwrite": gFiles, "pwritev": gFiles, "writev": gFiles,
	"sendfile": gFiles, "setxattr": gFiles, "removexattr": gFiles, "fdopen": gFiles,
	"createwritestream": gFiles, "namedtemporaryfile": gFiles, "temporaryfile": gFiles,
	"temporarydirectory": gFiles, "spooledtemporaryfile": gFiles, "o_wronly": gFiles,
	"o_rdwr": gFiles, "o_creat": gFiles, "o_trunc": gFiles, "o_append": gFiles,
	"memmap": gFiles, "chroot": gFiles, "chflags": gFiles, "lchflags": gFiles,
	"putenv": gFiles, "unsetenv": gFiles, "outputfile": gFiles, "outputfilesync": gFiles,
	"outputjson": gFiles, "ensuredir": gFiles, "ensurefile": gFiles, "emptydir": gFiles,
	"rimraf": gFiles, "extractall": gFiles, "extract": gFiles, "unpack_archive": gFiles,
	"make_archive": gFiles, "chdir": gFiles, "setpriority": gFiles, "umask": gFiles,

	// writers of data files
	"save": gWriter, "savefig": gWriter, "savez": gWriter, "savez_compressed": gWriter,
	"savetxt": gWriter, "tofile": gWriter, "to_file": gWriter, "dump": gWriter,
	"to_csv": gWriter, "to_parquet": gWriter, "to_sql": gWriter, "to_pickle": gWriter,
	"to_excel": gWriter, "to_json": gWriter, "to_feather": gWriter, "to_hdf": gWriter,
	"to_stata": gWriter, "to_gbq": gWriter, "to_orc": gWriter, "to_html": gWriter,
	"to_latex": gWriter, "to_xml": gWriter, "to_markdown": gWriter,
	"to_clipboard": gWriter, "to_netcdf": gWriter, "to_zarr": gWriter, "imwrite": gWriter,
	"imsave": gWriter, "writer": gWriter, "sink": gWriter,

	// network
	"socket": gNet, "urllib": gNet, "urllib3": gNet, "urlopen": gNet,
	"urlretrieve": gNet, "requests": gNet, "httpx": gNet, "http": gNet, "https": gNet,
	"http2": gNet, "aiohttp": gNet, "fetch": gNet, "net": gNet, "tls": gNet, "ssl": gNet,
	"dgram": gNet, "smtplib": gNet, "smtp": gNet, "ftplib": gNet, "ftp": gNet,
	"telnetlib": gNet, "paramiko": gNet, "boto3": gNet, "botocore": gNet,
	"xmlrpc": gNet, "websocket": gNet, "websockets": gNet, "grpc": gNet, "ssh": gNet,
	"sendto": gNet, "sendall": gNet, "sendmail": gNet, "upload": gNet, "post": gNet,
	"put": gNet, "download": gNet, "from_pretrained": gNet, "snapshot_download": gNet,
	"hf_hub_download": gNet, "load_dataset": gNet, "xmlhttprequest": gNet,
	"axios": gNet, "undici": gNet, "dns": gNet, "webbrowser": gNet, "hub": gNet,

	// code built at run time
	"eval": gCode, "exec": gCode, "compile": gCode, "__import__": gCode,
	"import_module": gCode, "runpy": gCode, "vm": gCode, "worker_threads": gCode,
	"marshal": gCode, "pickle": gCode, "dill": gCode, "cloudpickle": gCode,
	"shelve": gCode, "webassembly": gCode, "breakpoint": gCode, "load_inline": gCode,
	"evaluate": gCode, "sympify": gCode, "parse_expr": gCode, "unsafe_load": gCode,
	"full_load": gCode, "joblib": gCode, "help": gCode,

	// ways around a lexical judge
	"getattr": gEscape, "setattr": gEscape, "delattr": gEscape, "globals": gEscape,
	"locals": gEscape, "vars": gEscape, "__dict__": gEscape, "__class__": gEscape,
	"__subclasses__": gEscape, "__builtins__": gEscape, "builtins": gEscape,
	"__builtin__": gEscape, "__globals__": gEscape, "__code__": gEscape,
	"__getattribute__": gEscape, "__getattr__": gEscape, "__bases__": gEscape,
	"__base__": gEscape, "__mro__": gEscape, "__reduce__": gEscape,
	"__reduce_ex__": gEscape, "__loader__": gEscape, "__spec__": gEscape,
	"__closure__": gEscape, "__func__": gEscape, "__self__": gEscape,
	"__init_subclass__": gEscape, "__set_name__": gEscape, "ctypes": gEscape,
	"cffi": gEscape, "mmap": gEscape, "importlib": gEscape,
	"getmembers": gEscape, "attrgetter": gEscape, "methodcaller": gEscape,
	"pkgutil": gEscape, "resolve_name": gEscape, "pydoc": gEscape, "locate": gEscape,
	"f_globals": gEscape, "f_locals": gEscape, "f_builtins": gEscape,
	"_getframe": gEscape, "gi_frame": gEscape, "tb_frame": gEscape, "f_back": gEscape,
	"constructor": gEscape, "__proto__": gEscape, "reflect": gEscape,
	"globalthis": gEscape, "binding": gEscape, "linkedbinding": gEscape,
	"dlopen": gEscape, "mainmodule": gEscape, "_load": gEscape, "gc": gEscape,
	"get_objects": gEscape, "get_referrers": gEscape, "get_referents": gEscape,
	"__definegetter__": gEscape, "__lookupgetter__": gEscape,

	// destructive verbs of databases and services
	"drop": gDestroy, "destroy": gDestroy, "purge": gDestroy, "wipe": gDestroy,
	"erase": gDestroy, "flush": gDestroy, "flushall": gDestroy, "flushdb": gDestroy,
	"reset": gDestroy, "shutdown": gDestroy, "reboot": gDestroy, "poweroff": gDestroy,
	"revoke": gDestroy, "call_command": gDestroy, "dropdatabase": gDestroy,
	"drop_database": gDestroy, "deletemany": gDestroy, "deleteone": gDestroy,
	"commit": gDestroy, "insert_one": gDestroy, "insert_many": gDestroy,
	"insertone": gDestroy, "insertmany": gDestroy, "update_one": gDestroy,
	"update_many": gDestroy, "updateone": gDestroy, "updatemany": gDestroy,
	"replace_one": gDestroy, "replaceone": gDestroy, "bulkwrite": gDestroy,
	"find_one_and_update": gDestroy, "findoneandupdate": gDestroy,
	"find_one_and_replace": gDestroy, "findoneandreplace": gDestroy,
	"findoneanddelete": gDestroy,
}

// jsWords are names only JavaScript gives a meaning that matters here;
// in Python they are keywords or ordinary names.
var jsWords = map[string]group{
	"global": gEscape, "open": gFiles, "opensync": gFiles, "flag": gFiles,
	"flags": gFiles,
}

// jsCaseWords are compared case-sensitively: Function the constructor
// builds code, function the keyword does not.
var jsCaseWords = map[string]group{
	"Function": gCode, "AsyncFunction": gCode, "GeneratorFunction": gCode,
	"AsyncGeneratorFunction": gCode,
}

// pyCaseWords are compared case-sensitively too: yaml's loaders that build
// arbitrary objects, named apart from torch's DataLoader.
var pyCaseWords = map[string]group{
	"Loader": gCode, "FullLoader": gCode, "UnsafeLoader": gCode,
}

// sqlExempt names start with exec but are the SQL calls judged by the
// SQL rule instead.
var sqlExempt = map[string]bool{
	"execute": true, "executemany": true, "executescript": true,
}

// wholeAllowed are names quiet as a whole even though a part is listed:
// pandas' reset_index and drop_duplicates return new frames, and a
// thread pool starts no process.
var wholeAllowed = map[string]bool{
	"reset_index": true, "drop_duplicates": true, "threadpoolexecutor": true,
	"dropna": true,
}

// sqlCalls are the calls that run SQL text, lower-cased.
var sqlCalls = map[string]bool{
	"execute": true, "executemany": true, "executescript": true, "raw": true,
	"read_sql": true, "read_sql_query": true, "read_sql_table": true, "sql": true,
	"query": true, "prepare": true, "mogrify": true,
}

// sqlChanging are the SQL words that change data or schema, upper-cased.
var sqlChanging = map[string]bool{
	"DROP": true, "DELETE": true, "TRUNCATE": true, "UPDATE": true, "INSERT": true,
	"ALTER": true, "GRANT": true, "REVOKE": true, "CREATE": true, "REPLACE": true,
	"COPY": true, "VACUUM": true, "ATTACH": true, "PRAGMA": true, "MERGE": true,
	"UPSERT": true, "RENAME": true, "DETACH": true, "LOAD": true, "CALL": true,
	"EXEC": true, "EXECUTE": true, "LOCK": true, "REINDEX": true, "INTO": true,
}

// ormNames are the names whose presence makes update and create mass
// writes of an ORM (Django's objects, SQLAlchemy's query and session).
var ormNames = map[string]bool{"objects": true, "query": true, "session": true}

// ormWrites are the calls that write rows when an ORM is in sight.
var ormWrites = map[string]bool{
	"update": true, "create": true, "bulk_create": true, "get_or_create": true,
	"update_or_create": true, "bulk_update": true, "add": true, "add_all": true,
	"merge": true,
}

// pyModules are the top-level Python modules whose import is not quiet.
var pyModules = map[string]bool{
	"subprocess": true, "shutil": true, "socket": true, "socketserver": true,
	"ssl": true, "ctypes": true, "cffi": true, "multiprocessing": true, "pty": true,
	"signal": true, "smtplib": true, "ftplib": true, "telnetlib": true,
	"imaplib": true, "poplib": true, "nntplib": true, "http": true, "urllib": true,
	"urllib3": true, "requests": true, "httpx": true, "aiohttp": true, "boto3": true,
	"botocore": true, "paramiko": true, "fabric": true, "pexpect": true, "sh": true,
	"plumbum": true, "pickle": true, "cloudpickle": true, "dill": true,
	"marshal": true, "shelve": true, "dbm": true, "joblib": true, "importlib": true,
	"runpy": true, "code": true, "codeop": true, "webbrowser": true, "xmlrpc": true,
	"mmap": true, "pip": true, "ensurepip": true, "venv": true, "zipimport": true,
	"pdb": true, "bdb": true, "websocket": true, "websockets": true, "grpc": true,
	"asyncssh": true, "pycurl": true, "redis": true, "kafka": true, "pika": true,
	"docker": true, "kubernetes": true, "fsspec": true, "s3fs": true, "gcsfs": true,
	"huggingface_hub": true, "kaggle": true, "wget": true, "gdown": true,
	"selenium": true, "playwright": true, "scrapy": true,
	"pkgutil": true, "pydoc": true, "inspect": true, "builtins": true,
	"__builtin__": true, "gc": true, "setuptools": true, "distutils": true, "tarfile": true,
	"zipfile": true,
}

// jsModules are the JavaScript modules whose require or import is not
// quiet, without any node: prefix.
var jsModules = map[string]bool{
	"child_process": true, "net": true, "http": true, "https": true, "http2": true,
	"dgram": true, "dns": true, "tls": true, "vm": true, "worker_threads": true,
	"cluster": true, "inspector": true, "module": true, "repl": true, "v8": true,
	"wasi": true, "trace_events": true, "fs-extra": true, "rimraf": true, "del": true,
	"shelljs": true, "execa": true, "cross-spawn": true, "zx": true, "axios": true,
	"node-fetch": true, "got": true, "undici": true, "ws": true, "request": true,
	"superagent": true, "puppeteer": true, "playwright": true, "ssh2": true,
	"nodemailer": true, "socket.io": true, "socket.io-client": true,
}

// jsGlobals are the objects node, deno and bun give every program; like a
// required module they may only be used through a named member.
var jsGlobals = map[string]bool{
	"process": true, "module": true, "Deno": true, "Bun": true,
}

// runtimeAllowed are the members of Deno and Bun that only read.
var runtimeAllowed = map[string]bool{
	"readTextFile": true, "readTextFileSync": true, "readFile": true,
	"readFileSync": true, "readDir": true, "readDirSync": true, "stat": true,
	"statSync": true, "lstat": true, "lstatSync": true, "realPath": true,
	"realPathSync": true, "cwd": true, "args": true, "argv": true, "version": true,
	"build": true, "env": true, "noColor": true, "pid": true, "file": true,
	"exit": true,
}

// dataMembers are the members of a module or global that are plain data,
// so indexing them ([…]) reaches no function: process.argv[2].
var dataMembers = map[string]bool{
	"argv": true, "env": true, "versions": true, "args": true,
}

// openKeywords are the keyword arguments of open that cannot make it
// write; mode is judged on its own.
var openKeywords = map[string]bool{
	"encoding": true, "errors": true, "newline": true, "buffering": true,
}

// openModules are receivers whose open takes the path first and the mode
// second, like the builtin; any other receiver is taken to be a
// pathlib.Path, whose open takes the mode first.
var openModules = map[string]bool{
	"io": true, "codecs": true, "gzip": true, "bz2": true, "lzma": true,
	"tarfile": true, "builtins": true, "zipfile": true, "Image": true,
}
