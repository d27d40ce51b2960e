// Keyset paging: a page token records the list, its scope and the sort key of
// the last item returned, so items changing between pages never make a page
// skip or repeat a surviving item. Any other token answers ABORTED.
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"sort"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

type pageToken struct {
	L string `json:"l"`
	S string `json:"s"`
	K string `json:"k"`
}

// paginate returns the page of keys after `token` and the next token.
func paginate(keys []string, pageSize int32, token, list, scope string) ([]string, string, error) {
	if pageSize < 0 {
		return nil, "", ccmsdk.InvalidArgument(fmt.Sprintf("page_size must be >= 0, got %d", pageSize))
	}
	size := int(pageSize)
	if size == 0 {
		size = defaultPageSize
	}
	size = min(size, maxPageSize)
	after, hasAfter := "", false
	if token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		var t pageToken
		if err != nil || json.Unmarshal(raw, &t) != nil || t.L != list || t.S != scope {
			return nil, "", status.Error(codes.Aborted, "invalid page token for "+list+": start again from the first page")
		}
		after, hasAfter = t.K, true
	}
	sort.Strings(keys)
	page := []string{}
	for _, k := range keys {
		if !hasAfter || k > after {
			page = append(page, k)
		}
	}
	next := ""
	if len(page) > size {
		page = page[:size]
		raw, _ := json.Marshal(pageToken{L: list, S: scope, K: page[size-1]})
		next = base64.RawURLEncoding.EncodeToString(raw)
	}
	return page, next, nil
}
