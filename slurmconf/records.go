package slurmconf

import (
	"fmt"
	"strings"
)

// ReadGresRecords reads a gres.conf that stands on its own, such as one
// node's `slurm-mig gen` output, and returns all its records in file
// order, whichever nodes they name, each checked as slurmd checks the
// lines of its own node. A record keeps its NodeName= hostlist as written
// (Nodes) and its position. The file must hold records only: an Include
// line is an error (what it names is not part of this file), and so is
// AutoDetect= (a setting of the node that reads the file, not a record).
func ReadGresRecords(path string) ([]ParsedRecord, error) {
	data, err := readConf(path)
	if err != nil {
		return nil, err
	}
	return parseGresRecords(data, path)
}

// parseGresRecords is ReadGresRecords on the text of file.
func parseGresRecords(data, file string) ([]ParsedRecord, error) {
	recs := make([]ParsedRecord, 0, strings.Count(data, "\n"))
	var ws []word
	var lineErr error
	scanLines(data, func(l *logicalLine) bool {
		if _, ok := includeTarget(l.text); ok {
			lineErr = fmt.Errorf("%s: Include is not followed here: give the included file itself", linePos(file, l))
			return false
		}
		var r ParsedRecord
		var seen uint
		if r, seen, ws, lineErr = parseRecord(l, file, ws[:0]); lineErr != nil {
			return false
		}
		r.Pos = linePos(file, l)
		if seen&(1<<keyAutoDetect) != 0 {
			lineErr = fmt.Errorf("%s: AutoDetect= is a setting of the node reading gres.conf, not a record; set it in the cluster's gres.conf by hand", r.Pos)
			return false
		}
		if lineErr = checkRecord(&r); lineErr != nil {
			return false
		}
		recs = append(recs, r)
		return true
	})
	if lineErr != nil {
		return nil, lineErr
	}
	return recs, nil
}
