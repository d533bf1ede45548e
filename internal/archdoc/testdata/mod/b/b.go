// Package b is imported by a.
package b

// Do does nothing.
func Do() {}
