package atomicfile

// Target is the file Write writes for path: path itself, or where a symlink
// there leads by Write's rule (a dangling one is an error). A caller that
// looks at the file before it writes looks at, and reports, this one.
func Target(path string) (string, error) {
	p, err := locate(path)
	if err != nil {
		return "", err
	}
	defer p.dir.Close()
	if !p.linked {
		return path, nil
	}
	return p.path(), nil
}
