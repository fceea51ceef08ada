//go:build !unix

package notify

import "os/exec"

// killGroup leaves cmd as is: on this platform only the command itself is
// killed when its context ends.
func killGroup(*exec.Cmd) {}
