package atomicfile

// Target is the file Write writes for path: path itself, or the file a
// symlink there leads to (a dangling symlink is an error). A caller that
// looks at the file before it writes (gen -o compares records) looks at
// this one, and reports it as Write's Result would.
func Target(path string) (string, error) { return resolve(path) }
