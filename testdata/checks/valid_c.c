// A valid ABI 1 module from a real toolchain: clang + wasi-libc, a WASI
// preview 1 command that echoes one line of stdin to stdout.
#include <stdio.h>
#include <string.h>

int main(void) {
	char line[4096];
	if (fgets(line, sizeof line, stdin) == NULL) {
		printf("no input\n");
		return 0;
	}
	fputs(line, stdout);
	return 0;
}
