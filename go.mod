module github.com/slurm-mig/slurm-mig

go 1.26

require (
	github.com/NVIDIA/go-nvlib v0.9.0
	github.com/NVIDIA/go-nvml v0.13.3-1
	github.com/NVIDIA/mig-parted v0.10.0
	github.com/alecthomas/kong v1.17.0
	github.com/go-json-experiment/json v1.27.2
	github.com/google/go-cmp v0.7.0
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/sys v0.26.0
	gopkg.in/yaml.v3 v3.0.1
	sigs.k8s.io/yaml v1.4.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/sirupsen/logrus v1.9.3 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
