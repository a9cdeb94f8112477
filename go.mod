module corral

go 1.26.8

require (
	github.com/containerd/cgroups/v3 v3.1.3
	github.com/landlock-lsm/go-landlock v0.11.0
	github.com/seccomp/libseccomp-golang v0.11.1
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/moby/sys/userns v0.1.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.77 // indirect
)
