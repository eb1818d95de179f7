package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFileLimitsCheck(t *testing.T) {
	l := FileLimits{MaxFileBytes: 10, MaxWorkspaceBytes: 25, MaxFiles: 3}
	big := SizedFile{Path: "big.bin", Size: 11, SHA256: "b"}
	small := SizedFile{Path: "a.txt", Size: 5, SHA256: "a"}
	tests := []struct {
		name        string
		files, prev []SizedFile
		want        []string // violation paths ("" for a total)
	}{
		{"within", []SizedFile{small}, nil, nil},
		{"new file too large", []SizedFile{small, big}, nil, []string{"big.bin"}},
		{"too large file kept unchanged", []SizedFile{small, big}, []SizedFile{big}, nil},
		{"too large file changed", []SizedFile{{Path: "big.bin", Size: 12, SHA256: "c"}}, []SizedFile{big}, []string{"big.bin"}},
		{"unknown hash counts as changed", []SizedFile{{Path: "big.bin", Size: 11}}, []SizedFile{{Path: "big.bin", Size: 11}}, []string{"big.bin"}},
		{"total over", []SizedFile{{Path: "a", Size: 9}, {Path: "b", Size: 9}, {Path: "c", Size: 9}}, nil, []string{""}},
		{"total over but shrinking", []SizedFile{{Path: "a", Size: 9}, {Path: "b", Size: 9}, {Path: "c", Size: 9}},
			[]SizedFile{{Path: "a", Size: 9}, {Path: "b", Size: 9}, {Path: "c", Size: 9}, {Path: "d", Size: 9}}, nil},
		{"too many", []SizedFile{{Path: "a"}, {Path: "b"}, {Path: "c"}, {Path: "d"}}, nil, []string{""}},
		{"too many but fewer than before", []SizedFile{{Path: "a"}, {Path: "b"}, {Path: "c"}, {Path: "d"}},
			[]SizedFile{{Path: "a"}, {Path: "b"}, {Path: "c"}, {Path: "d"}, {Path: "e"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range l.Check(tc.files, tc.prev) {
				got = append(got, v.Path)
				assert.NotEmpty(t, v.Message)
			}
			assert.Equal(t, tc.want, got)
		})
	}
	d := FileLimits{}.WithDefaults()
	assert.Equal(t, int64(DefaultMaxFileBytes), d.MaxFileBytes)
	assert.Equal(t, DefaultMaxFiles, d.MaxFiles)
}
