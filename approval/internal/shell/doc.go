// Package shell is the gate's knowledge of shell text itself, before any
// program is looked at: what a terminal hides and the shell ignores
// ([Normalize]), how deeply a text nests before it is parsed
// ([ScanShape]), the tree of a plain command line built without the
// parser ([ParsePlain]), and the words of a command after quote removal
// ([Words], [Arg]), with the spellings rules compare ([CanonicalName],
// [CanonicalPath], [Line]) and the options programs take ([SplitOpts]).
//
// Nothing here knows what a program does; the walker (package walk) and
// the rules (package rules) build on it. Parsing proper is mvdan.cc/sh's:
// this package only prepares text for it and reads the words it yields.
//
// Every function runs in time linear in its input and keeps no state
// between calls, but for the blocks a [PlainBuf] lends the trees of one
// check, which its owner resets for the next.
//
// Nothing is expanded that the shell would take from the environment:
// a word holding an expansion is marked ([Arg].Dyn) and written as a
// placeholder, and brace expressions are expanded within bounds
// ([MaxBraceExprs]).
package shell
