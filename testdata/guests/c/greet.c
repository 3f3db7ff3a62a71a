/*
 * greet.c: the greet tool as an ABI 1 package in C (wasi-libc), with a tiny
 * hand-rolled JSON reader, to show that any WASI preview 1 toolchain can
 * implement the protocol without an SDK.
 *
 * Tools: greet {name} (as the Go guest), and trap {}, which executes the
 * WebAssembly `unreachable` instruction (a real trap, which Go cannot make).
 *
 * Build: make -C testdata/guests fixtures
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a minimal JSON reader: enough to find keys and decode strings ---- */

static const char *ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    return p;
}

/* skip_string expects p at the opening quote; returns past the closing one or NULL. */
static const char *skip_string(const char *p) {
    for (p++; *p; p++) {
        if (*p == '\\') {
            if (!*++p) return NULL;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* skip_value returns the end of the JSON value starting at p (after ws), or NULL. */
static const char *skip_value(const char *p) {
    p = ws(p);
    if (*p == '"') return skip_string(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                if (*p != '"' || !(p = skip_string(p))) return NULL;
                p = ws(p);
                if (*p++ != ':') return NULL;
            }
            if (!(p = skip_value(p))) return NULL;
            p = ws(p);
            if (*p == ',') { p = ws(p + 1); continue; }
            if (*p == close) return p + 1;
            return NULL;
        }
    }
    /* number, true, false, null */
    const char *s = p;
    while (*p && strchr("+-.0123456789eEtruefalsn", *p)) p++;
    return p > s ? p : NULL;
}

/* decode_string decodes the JSON string at p into a malloc'd UTF-8 C string. */
static char *decode_string(const char *p) {
    if (*p != '"') return NULL;
    const char *end = skip_string(p);
    if (!end) return NULL;
    char *out = malloc(end - p), *o = out;
    for (p++; p < end - 1; p++) {
        if (*p != '\\') { *o++ = *p; continue; }
        switch (*++p) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            if (sscanf(p + 1, "%4x", &cp) != 1) { free(out); return NULL; }
            p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && p[1] == '\\' && p[2] == 'u') {
                unsigned lo = 0;
                if (sscanf(p + 3, "%4x", &lo) == 1 && lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    p += 6;
                }
            }
            if (cp < 0x80) *o++ = cp;
            else if (cp < 0x800) { *o++ = 0xc0 | cp >> 6; *o++ = 0x80 | (cp & 0x3f); }
            else if (cp < 0x10000) { *o++ = 0xe0 | cp >> 12; *o++ = 0x80 | (cp >> 6 & 0x3f); *o++ = 0x80 | (cp & 0x3f); }
            else { *o++ = 0xf0 | cp >> 18; *o++ = 0x80 | (cp >> 12 & 0x3f); *o++ = 0x80 | (cp >> 6 & 0x3f); *o++ = 0x80 | (cp & 0x3f); }
            break;
        }
        default: *o++ = *p; /* " \ / */
        }
    }
    *o = 0;
    return out;
}

/* find_key returns the start of the value of key in the object at p, or NULL. */
static const char *find_key(const char *p, const char *key) {
    if (!p || *(p = ws(p)) != '{') return NULL;
    p = ws(p + 1);
    while (*p == '"') {
        char *k = decode_string(p);
        p = ws(skip_string(p));
        if (*p++ != ':') { free(k); return NULL; }
        p = ws(p);
        int hit = k && strcmp(k, key) == 0;
        free(k);
        if (hit) return p;
        if (!(p = skip_value(p))) return NULL;
        p = ws(p);
        if (*p != ',') return NULL;
        p = ws(p + 1);
    }
    return NULL;
}

/* ---- output ---- */

/* put_escaped writes s as the inside of a JSON string. */
static void put_escaped(FILE *f, const char *s) {
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c == '\n') fputs("\\n", f);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
}

static void put_id(const char *id, const char *id_end) {
    fwrite(id, 1, id_end - id, stdout);
}

static const char *META = "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":\"cgreet\",\"version\":\"0.1.0\"}}";

static void handle(const char *line) {
    const char *id = find_key(line, "id");
    if (!id || strncmp(id, "null", 4) == 0) return; /* a notification */
    const char *id_end = skip_value(id);
    const char *m = find_key(line, "method");
    char *method = m ? decode_string(m) : NULL;
    const char *params = find_key(line, "params");
    fprintf(stderr, "cgreet: %s\n", method ? method : "(no method)");

    if (method && strcmp(method, "tools/call") == 0) {
        const char *n = find_key(params, "name");
        char *tool = n ? decode_string(n) : NULL;
        if (tool && strcmp(tool, "trap") == 0) {
            /* before any byte of the answer, so the trap is the only fault */
            fprintf(stderr, "cgreet: trapping on purpose\n");
            __builtin_trap();
        }
        free(tool);
    }

    printf("{\"jsonrpc\":\"2.0\",\"id\":");
    put_id(id, id_end);
    if (method && strcmp(method, "server/discover") == 0) {
        printf(",\"result\":{\"resultType\":\"complete\",%s,\"ttlMs\":0,\"cacheScope\":\"public\","
               "\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{\"tools\":{}}}}\n", META);
    } else if (method && strcmp(method, "tools/list") == 0) {
        printf(",\"result\":{\"resultType\":\"complete\",%s,\"ttlMs\":0,\"cacheScope\":\"public\",\"tools\":["
               "{\"name\":\"greet\",\"description\":\"Greet someone by name.\",\"inputSchema\":{\"type\":\"object\","
               "\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"Who to greet.\"}},\"required\":[\"name\"]}},"
               "{\"name\":\"trap\",\"description\":\"Execute the WebAssembly unreachable instruction.\","
               "\"inputSchema\":{\"type\":\"object\"}}]}}\n", META);
    } else if (method && strcmp(method, "tools/call") == 0) {
        const char *n = find_key(params, "name");
        char *tool = n ? decode_string(n) : NULL;
        if (!tool || strcmp(tool, "greet") != 0) {
            printf(",\"error\":{\"code\":-32602,\"message\":\"unknown tool\"}}\n");
        } else {
            const char *a = find_key(find_key(params, "arguments"), "name");
            char *name = a && *a == '"' ? decode_string(a) : NULL;
            if (!name || !*name) {
                printf(",\"result\":{\"resultType\":\"complete\",%s,\"content\":[{\"type\":\"text\","
                       "\"text\":\"name must not be empty\"}],\"isError\":true}}\n", META);
            } else {
                /* the structured message, then the same JSON as escaped text */
                char *msg = malloc(strlen(name) + 10);
                sprintf(msg, "Hello, %s!", name);
                char *sc = NULL;
                size_t sclen = 0;
                FILE *s = open_memstream(&sc, &sclen);
                fputs("{\"message\":\"", s);
                put_escaped(s, msg);
                fputs("\"}", s);
                fclose(s);
                printf(",\"result\":{\"resultType\":\"complete\",%s,\"content\":[{\"type\":\"text\",\"text\":\"", META);
                put_escaped(stdout, sc);
                printf("\"}],\"structuredContent\":%s}}\n", sc);
                free(sc);
                free(msg);
            }
            free(name);
        }
        free(tool);
    } else {
        printf(",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}\n");
    }
    fflush(stdout);
    free(method);
}

int main(void) {
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, stdin) >= 0) {
        if (*ws(line)) handle(line);
    }
    free(line);
    return 0;
}
