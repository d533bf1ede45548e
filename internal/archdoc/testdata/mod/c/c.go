// Package c imports nothing.
package c
