package inline

// pyIdent judges a Python name by its context: imports, open and its
// modes, Path.replace, os.environ and sys.modules being changed, and
// torch.load told to unpickle.
func (j *judge) pyIdent(i int) string {
	switch t := j.toks[i].text; t {
	case "import", "from":
		return j.pyImport(i)
	case "open":
		return j.pyOpen(i)
	case "replace":
		return j.pyReplace(i)
	case "environ":
		return j.pyEnviron(i)
	case "modules":
		if j.receiver(i) == "sys" {
			return "reaches around the judge (sys.modules)"
		}
	case "weights_only":
		if j.is(i+1, "=") && j.identAt(i+2, "False") {
			return "builds code at run time (weights_only=False)"
		}
	}
	return j.fileCall(i)
}

// pyImport judges the modules named after import or from: each dotted
// name's first part. Relative imports (from . import x) name no module.
func (j *judge) pyImport(i int) string {
	k := i + 1
	for j.is(k, ".") || j.is(k, "...") || j.is(k, "(") {
		k++
	}
	for j.kind(k) == tIdent {
		if m := j.toks[k].text; pyModules[m] {
			return "imports " + m
		}
		if j.toks[i].text == "from" {
			return ""
		}
		k = j.pyNextImport(k)
	}
	return ""
}

// pyNextImport skips one dotted name and its alias, and the comma after
// it, returning where the next name starts (or a non-name).
func (j *judge) pyNextImport(k int) int {
	k++
	for j.is(k, ".") && j.kind(k+1) == tIdent {
		k += 2
	}
	if j.identAt(k, "as") {
		k += 2
	}
	if j.is(k, ",") {
		k++
	}
	return k
}

// pyReplace: os.replace renames, and so does Path.replace, told apart from
// str.replace(old, new) by its single argument.
func (j *judge) pyReplace(i int) string {
	if !j.is(i+1, "(") {
		return ""
	}
	if r := j.receiver(i); r == "os" || r == "Path" || r == "PurePath" {
		return "changes files (" + r + ".replace)"
	}
	if a := j.args(i + 1); len(a) == 1 && j.keyword(a[0]) == "" {
		return "changes files (replace)"
	}
	return ""
}

// pyEnviron: reading os.environ is quiet; changing it is not.
func (j *judge) pyEnviron(i int) string {
	const why = "changes os.environ"
	k := i + 1
	if j.is(k, "[") {
		k = j.match[k] + 1
	}
	if j.is(k, "=") || j.is(k, "|=") {
		return why
	}
	if j.is(k, ".") && j.kind(k+1) == tIdent {
		switch j.toks[k+1].text {
		case "update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__":
			return why
		}
	}
	return ""
}
