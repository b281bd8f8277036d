package gitguard

import "strings"

// allowedKey says that a configuration key a command wrote may stay: it
// neither runs a program nor makes git read another file or repository.
// It is an allow list because the keys that run something are many and
// grow with each git release (core.fsmonitor, diff.external, filter.*,
// hook.*, trailer.*.cmd, gpg.ssh.defaultKeyCommand …): a key not known to
// be harmless is removed. A fresh git init, git clone or git submodule
// add writes only keys listed here.
func allowedKey(key string) bool {
	section, sub, name := splitKey(strings.ToLower(key))
	if sub == "" {
		if keys, ok := twoPartKeys[section]; ok {
			return keys == nil || keys[name]
		}
		return false
	}
	keys, ok := threePartKeys[section]
	return ok && (keys == nil || keys[name])
}

// splitKey splits section.sub.section.name into its parts: the
// subsection is whatever lies between the first and the last dot.
func splitKey(k string) (section, sub, name string) {
	first, last := strings.IndexByte(k, '.'), strings.LastIndexByte(k, '.')
	if first < 0 {
		return k, "", ""
	}
	if first == last {
		return k[:first], "", k[last+1:]
	}
	return k[:first], k[first+1 : last], k[last+1:]
}

// set builds a key set.
func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// twoPartKeys are the sections whose section.name keys may stay: nil is
// every key of the section.
var twoPartKeys = map[string]map[string]bool{
	"core": set("repositoryformatversion", "filemode", "bare", "logallrefupdates", "ignorecase",
		"precomposeunicode", "symlinks", "autocrlf", "eol", "safecrlf", "quotepath", "compression",
		"loosecompression", "abbrev", "sparsecheckout", "sparsecheckoutcone", "untrackedcache",
		"splitindex", "commitgraph", "multipackindex", "preloadindex", "trustctime", "checkstat",
		"whitespace", "warnambiguousrefs", "deltabasecachelimit", "bigfilethreshold",
		"packedgitlimit", "packedgitwindowsize", "fsync", "fsyncmethod", "createobject",
		"commentchar", "commentstring", "sharedrepository", "protecthfs", "protectntfs",
		"filesreflocktimeout", "packedrefstimeout", "checkroundtripencoding"),
	"user":        nil,
	"author":      nil,
	"committer":   nil,
	"extensions":  nil,
	"init":        set("defaultbranch"),
	"branch":      set("autosetupmerge", "autosetuprebase", "sort"),
	"remote":      set("pushdefault"),
	"pull":        set("rebase", "ff", "twohead", "octopus"),
	"push":        set("default", "autosetupremote", "followtags", "recursesubmodules", "usebitmaps"),
	"fetch":       set("prune", "prunetags", "recursesubmodules", "parallel", "writecommitgraph", "showforcedupdates", "fsckobjects"),
	"merge":       set("ff", "conflictstyle", "renames", "renamelimit", "stat", "log", "autostash", "directoryrenames"),
	"rebase":      set("autosquash", "autostash", "updaterefs", "stat", "abbreviatecommands", "missingcommitscheck"),
	"diff":        set("renames", "renamelimit", "algorithm", "noprefix", "mnemonicprefix", "colormoved", "context", "indentheuristic", "submodule", "ignoresubmodules", "statgraphwidth"),
	"status":      set("showuntrackedfiles", "submodulesummary", "short", "branch", "relativepaths", "aheadbehind", "renames", "showstash"),
	"log":         set("date", "decorate", "follow", "abbrevcommit", "showsignature", "mailmap", "showroot"),
	"commit":      set("verbose", "status", "cleanup"),
	"tag":         set("sort"),
	"gc":          set("auto", "autopacklimit", "autodetach", "pruneexpire", "reflogexpire", "reflogexpireunreachable", "writecommitgraph", "aggressivewindow", "aggressivedepth"),
	"index":       set("version", "threads", "sparse", "skiphash"),
	"pack":        set("threads", "window", "depth", "windowmemory", "compression", "writebitmaps", "usesparse"),
	"feature":     set("manyfiles", "experimental"),
	"checkout":    set("defaultremote", "workers", "thresholdforparallelism"),
	"clone":       set("defaultremotename", "rejectshallow"),
	"submodule":   set("recurse", "fetchjobs", "propagatebranches"),
	"protocol":    set("version"),
	"maintenance": set("auto", "strategy"),
	"rerere":      set("enabled", "autoupdate"),
	"advice":      nil,
	"color":       nil,
	"column":      nil,
	"i18n":        set("commitencoding", "logoutputencoding"),
	"receive":     set("denycurrentbranch", "denydeletecurrent", "denynonfastforwards", "denydeletes", "fsckobjects", "shallowupdate", "unpacklimit"),
	"transfer":    set("fsckobjects", "unpacklimit"),
	"lfs":         set("repositoryformatversion"),
	"worktree":    set("guessremote"),
	"sparse":      set("expectfilesoutsideofpatterns"),
	"grep":        set("linenumber", "column", "extendedregexp", "patterntype", "fallbacktonoindex"),
	"stash":       set("showpatch", "showstat", "showincludeuntracked"),
	"blame":       set("date", "showemail", "coloring", "markunblamablelines", "markignoredlines"),
}

// threePartKeys are the sections whose section.SUB.name keys may stay.
// remote.NAME.url may name any transport, but the ones that run a command
// (ext::) are refused unless a protocol.*.allow setting allows them, and
// those are removed.
var threePartKeys = map[string]map[string]bool{
	"remote": set("url", "pushurl", "fetch", "push", "tagopt", "prune", "prunetags", "mirror",
		"promisor", "partialclonefilter", "skipdefaultupdate", "skipfetchall", "followremotehead"),
	"branch":    set("remote", "merge", "rebase", "pushremote", "description"),
	"submodule": set("url", "active", "branch", "ignore", "fetchrecursesubmodules", "shallow"),
	"color":     nil,
	"gc":        set("reflogexpire", "reflogexpireunreachable"),
}
