package slurmconf

// IncludeTargets lists the Include targets of a config file's text as
// walkConf reads them (logical lines, any case, unescaped). The fuzz
// targets of package slurmconf_test use it to keep fuzzed files from
// Including anything outside their temporary directory.
func IncludeTargets(data string) []string {
	var out []string
	scanLines(data, func(l *logicalLine) bool {
		if inc, ok := includeTarget(l.text); ok {
			out = append(out, inc)
		}
		return true
	})
	return out
}

// LineKeys lists the keys of each logical line of data, as written (an
// Include line or one that words refuses gives nil).
func LineKeys(data string) [][]string {
	var out [][]string
	scanLines(data, func(l *logicalLine) bool {
		ws, err := words(l, nil)
		var keys []string
		if err == nil {
			for _, w := range ws {
				keys = append(keys, w.key)
			}
		}
		out = append(out, keys)
		return true
	})
	return out
}
