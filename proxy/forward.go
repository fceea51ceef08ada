package proxy

import "strings"

// checkUpstreamPath is the stage that refuses, with 400, a call on a
// stored object (pinned, forwarded, a stored response) whose path, as it
// goes upstream with its ids untagged, is not plain: an id whose tag
// hides a dot segment, an empty one or an escape would otherwise reach
// the backend as one.
func checkUpstreamPath(x *exchange) error {
	if x.req == nil || x.req.Path == "" {
		return nil
	}
	up := "/" + x.req.Path
	if p, err := normalisePath(up); err != nil || strings.Count(p, "/") != strings.Count(up, "/") {
		return pathRefused("an id in the path is not plain")
	}
	return nil
}
