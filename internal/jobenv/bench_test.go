package jobenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkRun is env's work after the process starts, for a task of
// two MIG devices on a node of 8 GPUs x 7 MIG devices, with the node's
// line among 500 others in slurm.conf.
func BenchmarkRun(b *testing.B) {
	dir := b.TempDir()
	var gres, state strings.Builder
	st := &State{Version: StateVersion, Node: "gpu01"}
	for g := 0; g < 8; g++ {
		st.Devices = append(st.Devices, StateDevice{UUID: fmt.Sprintf("GPU-%08d-0000-4000-8000-000000000000", g), GPU: fmt.Sprintf("/dev/nvidia%d", g), MIG: true})
		for m := 0; m < 7; m++ {
			gi := 3 + 135*g + 9*(m+7)
			d := StateDevice{UUID: fmt.Sprintf("MIG-%08d-%04d-4000-8000-000000000000", g, m), GPU: fmt.Sprintf("/dev/nvidia%d", g),
				GICap: fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", gi), CICap: fmt.Sprintf("/dev/nvidia-caps/nvidia-cap%d", gi+1)}
			st.Devices = append(st.Devices, d)
			fmt.Fprintf(&gres, "NodeName=gpu01 Name=gpu Type=a100_1g.10gb MultipleFiles=%s,%s,%s Cores=0-15\n", d.GPU, d.GICap, d.CICap)
		}
	}
	st.Generation = generation(st.Devices)
	state.Write(st.Encode())
	var conf strings.Builder
	conf.WriteString("GresTypes=gpu\n")
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&conf, "NodeName=cpu%d CPUs=128 RealMemory=500000\n", i)
	}
	conf.WriteString("NodeName=gpu01 CPUs=128 Gres=gpu:a100_1g.10gb:56\n")
	for name, data := range map[string]string{"gres.conf": gres.String(), "slurm.conf": conf.String(), "devices.json": state.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	env := map[string]string{"SLURM_CONF": filepath.Join(dir, "slurm.conf"), "SLURMD_NODENAME": "gpu01", "SLURM_STEP_ID": "0",
		"SLURM_STEP_GPUS": "54,55", "SLURM_GPUS_ON_NODE": "2", "CUDA_VISIBLE_DEVICES": "0,1"}
	opts := Options{State: filepath.Join(dir, "devices.json"), Root: "/"}
	for b.Loop() {
		lines, err := Run(opts, lookup(env))
		if err != nil || len(lines) != 1 {
			b.Fatal(lines, err)
		}
	}
}
