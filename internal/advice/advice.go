// Package advice is how packages below cmd say what would help, apart from
// the message: a hint in their own words (Hinter), or a Fix that names
// what only the command line can give, which cmd words with its flags.
package advice

// Fix names what a problem needs that only the command line can give (a
// flag, a command that writes a file); each value's comment says the
// problem and what its Error's Args hold.
type Fix int

const (
	_ Fix = iota
	// Snapshot: NVML's library is missing; a snapshot taken on the node
	// would do instead.
	Snapshot
	// NodeName: this host's name is unknown, or is no node name Slurm
	// reads; the node's name must be given.
	NodeName
	// SnapshotNodeName: a snapshot names no host, and this host's name is
	// not its node's; the node's name must be given.
	SnapshotNodeName
	// AllowEmpty: no GPU or MIG device was found, and writing an empty
	// config must be asked for.
	AllowEmpty
	// TypeMap: GPUs of different names get the same type; a type map
	// would tell them apart.
	TypeMap
	// SnapshotCores: a snapshot has no cores for some GPUs; one taken on
	// the node records them, or Cores= can be left out.
	SnapshotCores
	// SnapshotHardware: a snapshot has no hardware for a whole node line;
	// one taken on the node records it, or the line can go without.
	SnapshotHardware
	// SlurmVersion: the installed Slurm did not say its release; the
	// admin can name it.
	SlurmVersion
	// StateNotWritten: the device state could not be written, and the
	// config file was left as it was; a node without a TaskProlog can
	// go without the state.
	StateNotWritten
	// StateMissing: there is no device state; the commands that write it
	// would.
	StateMissing
	// StateBeforeReboot: the device state is of an earlier boot; the
	// commands that write it would write it anew.
	StateBeforeReboot
	// StateStale: the device state differs from the GPUs (a part of
	// diff's verdict); the commands that write it would write it anew.
	StateStale
	// FragmentNodeName: a fleet fragment has a record without NodeName=;
	// gen writes it when not told to leave NodeName= out.
	FragmentNodeName
	// GresConfNodeAlias: no line of a gres.conf names the node, but one
	// names it by another name. Args: that name, and the node's.
	GresConfNodeAlias
	// GresConfNodeName: no line of a gres.conf names the node, but lines
	// name others; the node's name as slurm.conf has it would do.
	GresConfNodeName
	// NoScontrol: asking slurmctld needs scontrol, which is not installed.
	NoScontrol
	// OutputIsInput: the file merge would write is among the fragments
	// it reads.
	OutputIsInput
	// GresConfForeignLine: the node's gres.conf that gen would replace
	// holds a line it does not write. Args: the file.
	GresConfForeignLine
	// GresConfUnreadable: gen cannot read the node's gres.conf it would
	// replace. Args: the file.
	GresConfUnreadable
	// GresConfRenamed: the node's gres.conf that gen would replace is
	// gen's own, written for the node under another name. Args: the
	// file, the name it was written for, the name now.
	GresConfRenamed
	// NodeLineForeignLine: the file of the node's slurm.conf line that
	// node would replace holds a line, or a key, it does not write.
	// Args: the file.
	NodeLineForeignLine
	// NodeLineUnreadable: node cannot read the file of the node's line it
	// would replace. Args: the file.
	NodeLineUnreadable
	// ClusterGresConfForeignLine: the cluster's gres.conf that merge
	// would replace holds a line it does not write. Args: the file.
	ClusterGresConfForeignLine
	// ClusterGresConfUnreadable: merge cannot read the cluster's gres.conf
	// it would replace. Args: the file.
	ClusterGresConfUnreadable
	// ClusterNodeLinesForeignLine: the file of the cluster's slurm.conf
	// node lines that merge would replace holds a line, or a key, it does
	// not write. Args: the file.
	ClusterNodeLinesForeignLine
	// ClusterNodeLinesUnreadable: merge cannot read the file of node
	// lines it would replace. Args: the file.
	ClusterNodeLinesUnreadable
	// ParentEnded: the process that ran free has ended, so nothing would
	// end the claim; the process whose end ends it must be named.
	ParentEnded
	// JobProcess: the process named as the job's cannot be the job's.
	// Args: its pid.
	JobProcess
	// JobProcessOwner: the process named as the job's is another user's.
	// Args: its pid.
	JobProcessOwner
	// Count: more devices were asked for than the job may use. Args: how
	// many were asked for.
	Count

	endOfFixes // not a Fix: one past the last
)

// Fixes lists every Fix, for a test that each has its words.
func Fixes() []Fix {
	all := make([]Fix, 0, endOfFixes-1)
	for f := Fix(1); f < endOfFixes; f++ {
		all = append(all, f)
	}
	return all
}

// Hinter is an error that says what would fix it apart from its message,
// which reads whole without it; the printer puts the hint after it.
type Hinter interface {
	error
	Hint() string
}

// Hinted gives err a hint in the caller's own words, said after the message
// with its own leading separator ("; "); below cmd it names no flag.
func Hinted(err error, hint string) error { return &hinted{err, hint} }

type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }
func (h *hinted) Hint() string  { return h.hint }

// Error is a package's error, or warning, with the Fix that cmd words.
// Its own message is Err's, which reads whole without the Fix's words.
type Error struct {
	Err  error
	Fix  Fix
	Args []any // what the Fix's words name: a file, a node name
}

// Wrap gives err the Fix, with the values its words name.
func Wrap(err error, fix Fix, args ...any) error {
	return &Error{Err: err, Fix: fix, Args: args}
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }
