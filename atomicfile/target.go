package atomicfile

// Target is the file Write writes for path: path itself, or the file a
// symlink there leads to, resolved by the same rule as Write's (a symlink
// is followed only when root or this user owns it; a dangling one is an
// error). A caller that looks at the file before it writes (gen -o
// compares records) looks at this one, and reports it as Write's Result
// would.
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
