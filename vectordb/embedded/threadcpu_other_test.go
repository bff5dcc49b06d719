//go:build !linux

package embedded

import "time"

// threadCPU is not measured off Linux; the benchmark then omits cpu-p50-ms.
func threadCPU() time.Duration { return 0 }
