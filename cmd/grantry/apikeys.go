package main

import "flag"

// parseInterspersed parses args with fs, flags before, between and after the positional
// arguments, and returns the positional ones: `grantry apikey create ORG_ID --scope check`
// reads as naturally as with the flag first, where the flag package alone stops at ORG_ID.
// Everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
