package model

import (
	"fmt"
	"strconv"
	"strings"
)

// ValidUUID checks a UUID in NVML's forms: "GPU-<uuid>", or with mig
// "MIG-<uuid>" or (before driver 470.42.01) "MIG-GPU-<uuid>/<gi>/<ci>".
// Anything else is refused: env hands UUIDs to jobs as CUDA_VISIBLE_DEVICES.
func ValidUUID(uuid string, mig bool) error {
	if uuid == "" {
		return fmt.Errorf("no uuid")
	}
	if !mig {
		if body, ok := strings.CutPrefix(uuid, "GPU-"); ok && isUUID(body) {
			return nil
		}
		return fmt.Errorf("uuid %q is not a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi -L prints it)", uuid)
	}
	if body, ok := strings.CutPrefix(uuid, "MIG-"); ok && isUUID(body) {
		return nil
	}
	if _, _, _, ok := parseLegacyMigUUID(uuid); ok {
		return nil
	}
	return fmt.Errorf("uuid %q is not a MIG UUID (MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, or MIG-GPU-<GPU uuid>/<gi>/<ci> from drivers before 470.42.01, as nvidia-smi -L prints it)", uuid)
}

// isUUID reports whether s is a UUID in its text form: 32 hex digits in
// groups of 8, 4, 4, 4 and 12 joined by '-'. NVML writes them in lower
// case; upper case is taken too, as it names the same bytes.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// parseLegacyMigUUID splits an old-style MIG UUID,
// MIG-GPU-<gpu uuid>/<gi>/<ci>, into the GPU's UUID and the instance ids.
func parseLegacyMigUUID(uuid string) (gpu string, gi, ci int, ok bool) {
	rest, found := strings.CutPrefix(uuid, "MIG-")
	if !found {
		return "", 0, 0, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "GPU-") || !isUUID(parts[0][len("GPU-"):]) {
		return "", 0, 0, false
	}
	gi, giOK := instanceID(parts[1])
	ci, ciOK := instanceID(parts[2])
	return parts[0], gi, ci, giOK && ciOK
}

// instanceID reads a GI or CI id as the driver writes it: decimal, no
// sign, no leading zero.
func instanceID(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxInstanceID || s != strconv.Itoa(n) {
		return 0, false
	}
	return n, true
}
