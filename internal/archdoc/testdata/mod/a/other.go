package a

// Other lives in a second file of the package.
func Other() {}
