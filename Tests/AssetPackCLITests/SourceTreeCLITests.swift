#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Source trees that misled the packer's scan (found by a hostile-input hunt), through the built
/// binary: a link to a folder, folders whose names are NFC and NFD twins, a link out of the
/// source through such a twin, and a name whose backslashes become `..` components.
@Suite struct SourceTreeCLITests {
    let dir = TemporaryDirectory("source-tree-cli")
    static let password = "source-tree"

    func run(_ arguments: [String]) throws -> CLI.Run { try CLI.run(arguments, password: Self.password) }

    /// `path`'s bytes exactly as given (no Unicode normalisation on the way).
    func makeFolder(_ path: String) throws {
        #expect(mkdir(path, 0o755) == 0, "mkdir \(path): \(errno)")
    }
    func makeFile(_ path: String, _ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(fd >= 0, "open \(path): \(errno)")
        _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    /// The entries `pack` lists (the PATH column).
    func listed(_ pack: String) throws -> [String] {
        let list = try run(["list", pack, "--json"])
        #expect(list.status == 0, "\(list.stderr)")
        let doc = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any]
        return ((doc?["entries"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String }.sorted()
    }

    /// `c` links to the folder `d`: both are packed, `c/x` and `d/x`, where the scan packed only
    /// the path it reached first and dropped the folder itself (every run here: `c` sorts first).
    @Test(arguments: PackFormat.allCases)
    func aLinkToAFolderDoesNotHideTheFolder(format: PackFormat) throws {
        let src = dir.appending("linked-\(format.rawValue)").path
        try makeFolder(src)
        try makeFolder(src + "/d")
        try makeFile(src + "/d/x", "hello\n")
        #expect(symlink("d", src + "/c") == 0)
        let pack = dir.appending("linked.\(format.rawValue)").path
        let packed = try run(["pack", src, "-o", pack, "--format", format.rawValue])
        #expect(packed.status == 0, "\(packed.stderr)")
        #expect(try listed(pack) == ["c/x", "d/x"])
        let cat = try run(["cat", pack, "d/x"])
        #expect(cat.status == 0 && cat.stdout == Array("hello\n".utf8), "\(cat.stderr)")
    }

    /// Folders `é` (NFC) and `é` (NFD) with different files: both files are packed (their entry
    /// paths differ), where the second folder was taken for a link cycle (Swift strings compare
    /// the two names equal) and dropped.
    @Test func nfcAndNfdTwinFoldersAreBothPacked() throws {
        let src = dir.appending("twins").path
        try makeFolder(src)
        try makeFolder(src + "/\u{E9}")
        try makeFolder(src + "/e\u{301}")
        try makeFile(src + "/\u{E9}/x", "one\n")
        try makeFile(src + "/e\u{301}/y", "two\n")
        let pack = dir.appending("twins.zip").path
        let packed = try run(["pack", src, "-o", pack, "--format", "zip"])
        #expect(packed.status == 0, "\(packed.stderr)")
        #expect(try listed(pack) == ["\u{E9}/x", "\u{E9}/y"])
    }

    /// Packing the NFC folder `é`, in which a link points into its NFD twin `é` beside it (outside
    /// the source): refused as a link out of the source (exit 1), where the string comparison took
    /// the twin's path for one below the source and packed the file outside.
    @Test func aLinkIntoAnNFDTwinOfTheSourceIsOutsideIt() throws {
        let top = dir.appending("escape").path
        try makeFolder(top)
        let source = top + "/\u{E9}", twin = top + "/e\u{301}"
        try makeFolder(source)
        try makeFolder(twin)
        try makeFolder(twin + "/private")
        try makeFile(twin + "/private/s.txt", "secret\n")
        try makeFile(source + "/a", "a\n")
        #expect(symlink("../e\u{301}/private", source + "/innocent") == 0)
        let pack = dir.appending("escape.apack").path
        let packed = try run(["pack", source, "-o", pack, "--format", "container"])
        #expect(packed.status == 1, "\(packed.status) \(packed.stderr)")
        #expect(packed.stderr.contains("points outside the source directory"), "\(packed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: pack))
    }

    /// A file named `x\..\..\evil.txt`: its backslashes become separators, so its entry would be
    /// `x/../../evil.txt`, which leaves any folder it is extracted into (other tools' `unzip`
    /// among them). Refused (exit 1), where it was packed.
    @Test func aNameWhoseBackslashesClimbIsRefused() throws {
        let src = dir.appending("slip").path
        try makeFolder(src)
        try makeFile(src + "/ok.txt", "ok\n")
        try makeFile(src + "/x\\..\\..\\evil.txt", "pwned\n")
        let pack = dir.appending("slip.zip").path
        let packed = try run(["pack", src, "-o", pack, "--format", "zip", "--encryption", "none"])
        #expect(packed.status == 1, "\(packed.status) \(packed.stderr)")
        #expect(packed.stderr.contains("'..' component"), "\(packed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: pack))
    }
}

/// Folders that each link twice to the next (no cycle): a walk reaches the last one by 2^29 paths.
/// The scan stops at its limit of folders, where (since links no longer mark a folder visited) it
/// would have walked for ever.
@Suite struct SourceTreeLinkChainTests {
    let dir = TemporaryDirectory("link-chain")

    @Test func aChainOfDoubleLinksStopsAtTheLimit() throws {
        let src = dir.appending("chain")
        for k in 1...30 {
            try FileManager.default.createDirectory(
                at: src.appendingPathComponent("d\(k)"), withIntermediateDirectories: true)
        }
        try Data("x\n".utf8).write(to: src.appendingPathComponent("x.txt"))
        for k in 1..<30 {
            for name in ["a", "b"] {
                #expect(symlink("../d\(k + 1)", src.appendingPathComponent("d\(k)/\(name)").path) == 0)
            }
        }
        let error = #expect(throws: AssetPackError.self) {
            _ = try SourceTree.scanReporting(root: src, includeHidden: false, maxFiles: 5000)
        }
        #expect(error?.code == .limitExceeded, "\(String(describing: error))")
        #expect(error?.message.contains("more than 5000 folders") == true, "\(String(describing: error))")
    }
}

/// What the packer does when a scanned file's name is given to something else before it is read
/// (a FIFO, whose open waited for a writer forever; a symbolic link to a file outside the
/// source, which was packed): refused, naming the file, for both formats.
@Suite struct SourceSwappedAfterScanTests {
    let dir = TemporaryDirectory("source-swapped")

    @Test(arguments: PackFormat.allCases)
    func aFileSwappedAfterTheScanIsRefused(format: PackFormat) throws {
        for swap in ["fifo", "link"] {
            let src = dir.appending("\(swap)-\(format.rawValue)")
            try FileManager.default.createDirectory(at: src, withIntermediateDirectories: true)
            try Data("a\n".utf8).write(to: src.appendingPathComponent("a.txt"))
            try Data("z\n".utf8).write(to: src.appendingPathComponent("z.txt"))
            let outside = dir.appending("outside.txt")
            try Data("outside\n".utf8).write(to: outside)
            let files = try SourceTree.scan(root: src, includeHidden: false)
            let z = src.appendingPathComponent("z.txt").path
            try FileManager.default.removeItem(atPath: z)
            if swap == "fifo" {
                #expect(mkfifo(z, 0o644) == 0)
            } else {
                #expect(symlink(outside.path, z) == 0)
            }
            var options = PackOptions()
            options.format = format
            options.credential = format == .container ? .key(Array(repeating: 7, count: 32)) : .password("swap")
            let output = dir.appending("\(swap).\(format.rawValue)")
            let error = #expect(throws: AssetPackError.self, "\(swap)") {
                _ = try AssetPacks.pack(files, skipped: [], to: output, options: options, watch: Stopwatch())
            }
            #expect(error?.code == .io, "\(swap): \(String(describing: error))")
            #expect(
                error?.message.contains(swap == "fifo" ? "no longer a regular file" : "became a symbolic link") == true,
                "\(swap): \(String(describing: error))")
        }
    }
}
#endif
