package release

// Once is once, for the tests.
var Once = once
