package hostlinks

import "errors"

// ErrNotNetNS: a path is there but is not a network namespace.
var ErrNotNetNS = errors.New("not a network namespace")
