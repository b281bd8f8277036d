// Package mountinfo reads what the kernel writes in a mount table
// (/proc/PID/mountinfo, proc(5)). A mount point's path there has its
// space, tab, newline and backslash written as a backslash and three
// octal digits, so that the line splits on white space; [Unescape]
// gives the path back.
package mountinfo
