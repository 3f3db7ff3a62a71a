//! ziggreet: the greet tool as an ABI 1 package in Zig 0.11, with the
//! standard library's JSON only: each request is parsed into a
//! std.json.Value and the id written back with std.json.stringify, as a
//! Zig author would. That writer quotes every integer from 2^52 on
//! ("4835258808700009"), which is why the host sends integer ids only up to
//! 2^31-1 and `check` reports the change (protocol.id_safe_integer).
//!
//! Build: make -C testdata/guests/zig fixtures
const std = @import("std");

const meta = "\"_meta\":{\"io.modelcontextprotocol/serverInfo\":{\"name\":\"ziggreet\",\"version\":\"0.1.0\"}}";

pub fn main() !void {
    var gpa = std.heap.GeneralPurposeAllocator(.{}){};
    const allocator = gpa.allocator();
    const stdin = std.io.getStdIn().reader();
    const stdout = std.io.getStdOut().writer();
    const stderr = std.io.getStdErr().writer();
    while (true) {
        const line = (try stdin.readUntilDelimiterOrEofAlloc(allocator, '\n', 64 << 20)) orelse return;
        defer allocator.free(line);
        if (std.mem.trim(u8, line, " \t\r").len == 0) continue;
        var out = std.ArrayList(u8).init(allocator);
        defer out.deinit();
        handle(allocator, line, out.writer()) catch |err| {
            try stderr.print("ziggreet: ignoring a line: {}\n", .{err});
            continue;
        };
        if (out.items.len > 0) {
            try out.append('\n');
            try stdout.writeAll(out.items);
        }
    }
}

fn handle(allocator: std.mem.Allocator, line: []const u8, w: anytype) !void {
    const parsed = try std.json.parseFromSlice(std.json.Value, allocator, line, .{});
    defer parsed.deinit();
    const req = switch (parsed.value) {
        .object => |o| o,
        else => return error.NotAnObject,
    };
    const id = req.get("id") orelse return; // a notification
    if (id == .null) return;
    const method = if (req.get("method")) |m| (if (m == .string) m.string else "") else "";
    std.debug.print("ziggreet: {s}\n", .{method});

    try w.writeAll("{\"jsonrpc\":\"2.0\",\"id\":");
    try std.json.stringify(id, .{}, w);
    if (std.mem.eql(u8, method, "server/discover")) {
        try w.writeAll(",\"result\":{\"resultType\":\"complete\"," ++ meta ++ ",\"ttlMs\":0,\"cacheScope\":\"public\",\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{\"tools\":{}}}}");
    } else if (std.mem.eql(u8, method, "tools/list")) {
        try w.writeAll(",\"result\":{\"resultType\":\"complete\"," ++ meta ++ ",\"ttlMs\":0,\"cacheScope\":\"public\",\"tools\":[{\"name\":\"greet\",\"description\":\"Greet someone by name.\"," ++
            "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"Who to greet.\"}},\"required\":[\"name\"]}," ++
            "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}},\"required\":[\"message\"]}}]}}");
    } else if (std.mem.eql(u8, method, "tools/call")) {
        var tool: []const u8 = "";
        var name: ?[]const u8 = null;
        if (req.get("params")) |p| if (p == .object) {
            if (p.object.get("name")) |t| if (t == .string) {
                tool = t.string;
            };
            if (p.object.get("arguments")) |a| if (a == .object) {
                if (a.object.get("name")) |n| if (n == .string) {
                    name = n.string;
                };
            };
        };
        if (!std.mem.eql(u8, tool, "greet")) {
            try w.writeAll(",\"result\":{\"resultType\":\"complete\"," ++ meta ++ ",\"content\":[{\"type\":\"text\",\"text\":\"unknown tool\"}],\"isError\":true}}");
        } else if (name == null or name.?.len == 0) {
            try w.writeAll(",\"result\":{\"resultType\":\"complete\"," ++ meta ++ ",\"content\":[{\"type\":\"text\",\"text\":\"name must be a non-empty string\"}],\"isError\":true}}");
        } else {
            const message = try std.fmt.allocPrint(std.heap.page_allocator, "Hello, {s}!", .{name.?});
            var sc = std.ArrayList(u8).init(std.heap.page_allocator);
            try std.json.stringify(.{ .message = message }, .{}, sc.writer());
            try w.writeAll(",\"result\":{\"resultType\":\"complete\"," ++ meta ++ ",\"content\":[{\"type\":\"text\",\"text\":");
            try std.json.stringify(sc.items, .{}, w);
            try w.writeAll("}],\"structuredContent\":");
            try w.writeAll(sc.items);
            try w.writeAll("}}");
        }
    } else {
        try w.writeAll(",\"error\":{\"code\":-32601,\"message\":\"method not found\"}}");
    }
}
