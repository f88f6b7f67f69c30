/*
Copyright 2026 The Flint Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package cli gives every Flint binary the same command line conventions:
// GNU-style --help and --version, and usage that says what the binary is.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flint-io/flint/internal/version"
)

// Command describes one Flint binary.
type Command struct {
	// Name is the binary's name, as typed.
	Name string
	// Summary says in one line what the binary does.
	Summary string
	// Description says in a paragraph where the binary runs and what it needs.
	Description string
	// Flags are the binary's own flags; --version is added.
	Flags *flag.FlagSet
	// Args names what follows the flags in the usage line, if anything.
	Args string
}

// Parse parses args (without the program name). It prints help or the
// version and returns done=true when one was asked for; on a bad flag it
// returns an error that has already been reported with the usage.
func (c *Command) Parse(args []string, stdout io.Writer) (done bool, err error) {
	if c.Flags == nil {
		c.Flags = flag.NewFlagSet(c.Name, flag.ContinueOnError)
	}
	showVersion := c.Flags.Bool("version", false, "print the version and exit")
	c.Flags.SetOutput(stdout)
	c.Flags.Usage = func() {
		_, _ = fmt.Fprintf(stdout, "%s - %s\n\n%s\n\nUsage: %s\n\nFlags:\n", c.Name, c.Summary, c.Description, strings.TrimSpace(c.Name+" [flags] "+c.Args))
		c.Flags.PrintDefaults()
	}
	if err := c.Flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return true, err
	}
	if *showVersion {
		_, _ = fmt.Fprintln(stdout, version.String(c.Name))
		return true, nil
	}
	return false, nil
}

// Main parses the command line and runs run when neither help nor the
// version was asked for; it exits with 2 on a bad flag and 1 when run fails.
func (c *Command) Main(run func() error) { c.MainArgs(os.Args[1:], run) }

// MainArgs is Main for a subcommand's args.
func (c *Command) MainArgs(args []string, run func() error) {
	done, err := c.Parse(args, os.Stdout)
	if err != nil {
		os.Exit(2)
	}
	if done {
		return
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(1)
	}
}
