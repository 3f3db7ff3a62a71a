package runtime

import "path/filepath"

// PackageDir returns Packages/<key>, where the upload puts the package
// directory of key for LoadPackage to find, after checking key as
// LoadPackage does (one plain path element): a key from a user never
// names a directory outside Packages.
func (d DirLoader) PackageDir(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.Packages, key), nil
}
