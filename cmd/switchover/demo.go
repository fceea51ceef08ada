package main

import (
	"context"
	"errors"
	"io"
)

// placeholder until the simulator lands
func serveDemo(ctx context.Context, listen string, stdout, stderr io.Writer) error {
	return usageError{errors.New("serve needs -c FILE")}
}

func simCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("sim: not built yet")
}
