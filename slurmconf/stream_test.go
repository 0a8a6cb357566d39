package slurmconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slurm-mig/slurm-mig/internal/advice"
)

// fifo makes a named pipe in a temp dir and writes data into it once a
// reader opens it, as the shell's <(command) gives one.
func fifo(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString(data)
		f.Close()
	}()
	return path
}

// withStdin runs f with os.Stdin reading data.
func withStdin(t *testing.T, data string, f func()) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.WriteString(data); w.Close() }()
	saved := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = saved; r.Close() }()
	f()
}

func TestReadConfigFromPipeAndStdin(t *testing.T) {
	const conf = "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\nNodeName=n2 Name=gpu File=/dev/nvidia1\n"
	c, err := ReadGresConf(fifo(t, conf), "n1")
	if err != nil || len(c.Records) != 1 || c.Records[0].Type != "a100" {
		t.Fatalf("from a pipe: %+v, %v", c, err)
	}
	withStdin(t, conf, func() {
		c, err = ReadGresConf(Stdin, "n1")
	})
	if err != nil || len(c.Records) != 1 || !strings.HasPrefix(c.Records[0].Pos, StdinName+":1") {
		t.Fatalf("from stdin: %+v, %v", c, err)
	}
	withStdin(t, "ClusterName=c\nNodeName=n1 Gres=gpu:a100:1\n", func() {
		var ng NodeGres
		ng, err = ReadNodeGres(Stdin, "n1")
		if err == nil && (ng.Gres != "gpu:a100:1" || ng.Pos != StdinName+":2") {
			t.Errorf("slurm.conf from stdin: %+v", ng)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	withStdin(t, "bogus=1\n", func() { _, err = ReadGresConf(Stdin, "n1") })
	if want := `<stdin>:1: unknown gres.conf keyword "bogus"`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

// A config from a pipe came from elsewhere: its relative Includes have no
// directory to be read from and are refused; absolute ones are followed.
func TestPipeIncludes(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "node.conf")
	if err := os.WriteFile(abs, []byte("NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ReadGresConf(fifo(t, "AutoDetect=off\nInclude "+abs+"\n"), "n1")
	if err != nil || len(c.Records) != 1 || c.Records[0].Type != "h100" {
		t.Fatalf("absolute Include from a pipe: %+v, %v", c, err)
	}
	path := fifo(t, "AutoDetect=off\nInclude gres.d/n1.conf\n")
	_, err = ReadGresConf(path, "n1")
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: Include gres.d/n1.conf: a relative Include in a config read from a pipe") {
		t.Errorf("relative Include from a pipe: err = %v", err)
	}
	var h advice.Hinter
	if want := "; pass the file itself, or make the Include absolute"; !errors.As(err, &h) || h.Hint() != want || strings.HasSuffix(err.Error(), want) {
		t.Errorf("relative Include from a pipe: %v, want the hint %q apart from the message", err, want)
	}
}

// Devices, directories and the like are not configs.
func TestReadConfigRefusesOtherFiles(t *testing.T) {
	for _, path := range []string{"/dev/zero", t.TempDir()} {
		if _, err := ReadGresConf(path, "n1"); err == nil || !strings.Contains(err.Error(), "not a regular file or a pipe") {
			t.Errorf("ReadGresConf(%s): err = %v", path, err)
		}
	}
}

// A FIFO whose writer writes and closes at once is read to its end, every
// time. Opened twice, the second open waited for a writer that had already
// been and gone, for ever; so each read here has a deadline, and a
// regression fails rather than hangs the suite. The writer is given time to
// be waiting in its open before the read starts, as the shell's
// <(printf ...) is, which is when a second open would hang.
func TestFIFOWriterThatClosesAtOnce(t *testing.T) {
	const conf = "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"
	for i := range 30 {
		path := fifo(t, conf)
		time.Sleep(10 * time.Millisecond)
		done := make(chan error, 1)
		go func() {
			c, err := ReadGresConf(path, "n1")
			if err == nil && (len(c.Records) != 1 || c.Records[0].Type != "a100") {
				err = fmt.Errorf("read %+v", c.Records)
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("read %d of 30: %v", i+1, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("read %d of 30 of a FIFO whose writer had closed hung", i+1)
		}
	}
}

// A FIFO read before its writer has opened it waits for the writer rather
// than taking the missing writer for the end of an empty config.
func TestFIFOWaitsForItsWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.WriteString("NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n")
		f.Close()
	}()
	c, err := ReadGresConf(path, "n1")
	if err != nil || len(c.Records) != 1 || c.Records[0].Type != "a100" {
		t.Fatalf("a FIFO whose writer came late: %+v, %v", c, err)
	}
}
