# A command gate of the kind many agent harnesses ship: a table of regular
# expressions tried in order over the lowercased command, the first match
# asking. gate.check.regex measures runbox check --jsonl against it, over
# the same input in the same run. The patterns are runbox's own, written to
# the shape and size of such tables (about forty rules: deletions, disk
# writes, permissions, pipes into a shell, interpreters with inline code,
# services, history rewrites, secrets); they are a baseline for speed, not
# a gate anyone should use.
#
# Input: one JSON string a line. Output: one JSON object a line.
import json
import re
import sys

TABLE = [
    (r"\brm\s+(-[^\s]*\s+)*/", "delete in the root path"),
    (r"\brm\s+-[^\s]*r", "recursive delete"),
    (r"\brm\s+--recursive\b", "recursive delete (long option)"),
    (r"\brmdir\s+/", "remove a directory at the root"),
    (r"\bchmod\s+(-[^\s]*\s+)*(777|666|o\+w|a\+w)\b", "world-writable permissions"),
    (r"\bchmod\s+--recursive\b.+777", "recursive world-writable permissions"),
    (r"\bchown\s+-[^\s]*r[^\s]*\s+root", "recursive chown to root"),
    (r"\bmkfs(\.[a-z0-9]+)?\b", "make a file system"),
    (r"\bdd\s+.*\bif=", "raw disk copy"),
    (r">\s*/dev/sd[a-z]", "write to a block device"),
    (r"\bdrop\s+(table|database)\b", "SQL drop"),
    (r"\bdelete\s+from\b(?!.*\bwhere\b)", "SQL delete without where"),
    (r"\btruncate\s+(table\s+)?\w+", "SQL truncate"),
    (r">\s*/etc/", "overwrite a system configuration"),
    (r"\bsystemctl\s+(stop|disable|mask)\b", "stop a system service"),
    (r"\bkill\s+-9\s+-1\b", "kill every process"),
    (r"\bpkill\s+-9\b", "force-kill processes by name"),
    (r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:", "fork bomb"),
    (r"\b(bash|sh|zsh|ksh)\s+-[^\s]*c\b", "shell with inline commands"),
    (r"\b(python[23]?|perl|ruby|node)\s+-[ec]\b", "interpreter with inline code"),
    (r"\b(curl|wget)\b.*\|\s*(ba)?sh\b", "download piped into a shell"),
    (r"\b(curl|wget)\b.*\|\s*(python[23]?|perl|ruby|node)\b", "download piped into an interpreter"),
    (r"\bxargs\s+.*\brm\b", "xargs into rm"),
    (r"\bfind\b.*-exec\s+rm\b", "find running rm"),
    (r"\bfind\b.*-delete\b", "find deleting"),
    (r"\bgit\s+reset\s+--hard\b", "discard uncommitted work"),
    (r"\bgit\s+push\b.*(--force|-f\b)", "force push"),
    (r"\bgit\s+clean\s+-[^\s]*f", "delete untracked files"),
    (r"\bgit\s+branch\s+-D\b", "force-delete a branch"),
    (r"\bgit\s+checkout\s+(--\s+)?\.\s*$", "discard changes in the tree"),
    (r"\bshutdown\b|\breboot\b|\bhalt\b|\bpoweroff\b", "stop the machine"),
    (r"\bcrontab\s+-r\b", "remove every scheduled job"),
    (r"\biptables\s+-F\b", "flush the firewall"),
    (r"\bsudo\b", "run as root"),
    (r"\bsu\s+-?\s*$", "become root"),
    (r"\b(cat|less|head|tail)\s+.*\.ssh/", "read an ssh key"),
    (r"\benv\b.*\|\s*(curl|nc|wget)\b", "environment sent away"),
    (r"\bnc\s+-[^\s]*e\b", "a shell over netcat"),
    (r"\b(npm|cargo|twine)\s+(publish|upload)\b", "publish a package"),
    (r"\bdocker\s+(rm|rmi|system\s+prune)\b", "remove containers or images"),
    (r"\bkubectl\s+delete\b", "delete cluster resources"),
    (r"\bterraform\s+destroy\b", "destroy infrastructure"),
]


def check(command):
    low = command.lower()
    for pattern, reason in TABLE:
        if re.search(pattern, low, re.IGNORECASE | re.DOTALL):
            return "ask", reason
    return "allow", ""


def main():
    out = sys.stdout
    for line in sys.stdin:
        command = json.loads(line)
        decision, reason = check(command)
        out.write(json.dumps({"command": command, "decision": decision, "reason": reason}) + "\n")


main()
