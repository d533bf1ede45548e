package a

import "example.com/m/b"

// Steps runs first, then second, then b.Do: the order check's subject.
func Steps() {
	first()
	if second() {
		b.Do()
	}
}

func first() {}

func second() bool { return true }
