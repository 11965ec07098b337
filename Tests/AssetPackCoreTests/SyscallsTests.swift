import AssetPackCore
import AssetPackTestSupport
import Foundation
import Testing

@Suite struct SyscallsTests {
    @Test func writeThenReadRoundTrip() throws {
        let dir = TemporaryDirectory()
        let path = dir.appending("data").path
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let out = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusiveCreate], permissions: 0o600)
        try out.closeAfter {
            try bytes.withUnsafeBytes { try out.writeAll($0) }
            try [UInt8](repeating: 0xAB, count: 3).withUnsafeBytes { try out.pwriteAll($0, at: 10) }
            try out.fsync()
        }
        var expected = bytes
        expected[10..<13] = [0xAB, 0xAB, 0xAB]

        let fd = try FileDescriptor.open(path, .readOnly)
        defer { try? fd.close() }
        let status = try fd.status()
        #expect(status.kind == .regular)
        #expect(status.size == UInt64(bytes.count))
        #expect(status.permissions == 0o600)

        var all = [UInt8](repeating: 0, count: bytes.count + 10)
        let n = try all.withUnsafeMutableBytes { try fd.readFully(into: $0) }
        #expect(n == bytes.count)
        #expect(Array(all[0..<n]) == expected)
        #expect(try all.withUnsafeMutableBytes { try fd.read(into: $0) } == 0)  // end of file

        var middle = [UInt8](repeating: 0, count: 1000)
        #expect(try middle.withUnsafeMutableBytes { try fd.preadFully(into: $0, at: 5000) } == 1000)
        #expect(middle == Array(expected[5000..<6000]))
        var tail = [UInt8](repeating: 0, count: 1000)
        #expect(try tail.withUnsafeMutableBytes { try fd.preadFully(into: $0, at: UInt64(bytes.count - 10)) } == 10)

        try fd.seek(to: 10)
        var three = [UInt8](repeating: 0, count: 3)
        #expect(try three.withUnsafeMutableBytes { try fd.read(into: $0) } == 3)
        #expect(three == [0xAB, 0xAB, 0xAB])
    }

    #if os(Linux)
    /// A punched hole reads as zeros and keeps the file's size (what the remote mirror's cache
    /// relies on when it evicts).
    @Test func punchedHolesReadAsZerosAndKeepTheSize() throws {
        let dir = TemporaryDirectory()
        let path = dir.appending("holes").path
        let fd = try FileDescriptor.open(path, .readWrite, options: [.create], permissions: 0o600)
        defer { try? fd.close() }
        let bytes = [UInt8](repeating: 0x5A, count: 1 << 20)
        try bytes.withUnsafeBytes { try fd.pwriteAll($0, at: 0) }
        try fd.punchHole(256 << 10..<768 << 10)
        #expect(try fd.status().size == 1 << 20)
        var back = [UInt8](repeating: 1, count: 1 << 20)
        #expect(try back.withUnsafeMutableBytes { try fd.preadFully(into: $0, at: 0) } == 1 << 20)
        #expect(back[0..<(256 << 10)].allSatisfy { $0 == 0x5A })
        #expect(back[(256 << 10)..<(768 << 10)].allSatisfy { $0 == 0 })
        #expect(back[(768 << 10)...].allSatisfy { $0 == 0x5A })
    }
    #endif

    @Test func missingFileIsENOENT() {
        let dir = TemporaryDirectory()
        let path = dir.appending("missing").path
        #expect(throws: Errno.noSuchFileOrDirectory) { try FileDescriptor.open(path, .readOnly) }
        #expect(throws: Errno(rawValue: ENOENT)) { try FileSystem.stat(path) }
        let error = Errno.noSuchFileOrDirectory.io("cannot open \(path)")
        #expect(error.code == .io)
        #expect(error.message == "cannot open \(path): No such file or directory")
        #expect(error.underlying == .errno(ENOENT))
    }

    @Test func kinds() throws {
        let dir = TemporaryDirectory()
        #expect(try FileSystem.stat(dir.path).kind == .directory)
        let fifo = dir.appending("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(try FileSystem.lstat(fifo).kind == .fifo)
        let link = dir.appending("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir.path)
        #expect(try FileSystem.lstat(link).kind == .symbolicLink)
        #expect(try FileSystem.stat(link).kind == .directory)
        #expect(try FileSystem.realpath(link) == FileSystem.realpath(dir.path))
    }

    @Test func modificationTimeInNanoseconds() throws {
        let dir = TemporaryDirectory()
        let url = try dir.write(["f": [1]]).appendingPathComponent("f")
        let date = Date(timeIntervalSince1970: 1_700_000_000.25)
        try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: url.path)
        #expect(try FileSystem.stat(url.path).modificationTime == 1_700_000_000_250_000_000)
    }

    @Test func reopenIsTheSameFile() throws {
        let dir = TemporaryDirectory()
        let path = try dir.write(["pack": [1, 2, 3]]).appendingPathComponent("pack").path
        let fd = try FileDescriptor.open(path, .readOnly)
        defer { try? fd.close() }
        for copy in [try fd.reopen(path), try fd.reopenByPath(path)] {
            defer { try? copy.close() }
            #expect(try copy.status().isSameFile(as: fd.status()))
            try copy.seek(to: 2)  // its own offset
            var one = [UInt8](repeating: 0, count: 1)
            #expect(try one.withUnsafeMutableBytes { try fd.read(into: $0) } == 1)
            #expect(one == [1])
            try fd.seek(to: 0)
        }
    }

    /// The fallback never reads a file that replaced the one opened: a rename over the path is refused.
    @Test func reopenByPathRefusesAReplacedFile() throws {
        let dir = TemporaryDirectory()
        let root = try dir.write(["pack": [1, 2, 3], "other": [4, 5, 6]])
        let path = root.appendingPathComponent("pack").path
        let fd = try FileDescriptor.open(path, .readOnly)
        defer { try? fd.close() }
        try FileSystem.rename(root.appendingPathComponent("other").path, to: path)
        #expect(throws: Errno.staleFileHandle) { try fd.reopenByPath(path) }
        try FileSystem.unlink(path)
        #expect(throws: Errno.noSuchFileOrDirectory) { try fd.reopenByPath(path) }
        #if os(Linux)
        // `/proc/self/fd` still names the file opened first.
        let copy = try fd.reopen(path)
        defer { try? copy.close() }
        var bytes = [UInt8](repeating: 0, count: 3)
        #expect(try bytes.withUnsafeMutableBytes { try copy.readFully(into: $0) } == 3)
        #expect(bytes == [1, 2, 3])
        #endif
    }
}
