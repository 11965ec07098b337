import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a re-pack remembers of its sources from the last pack of the same output: for each source
/// file, its status then (device, inode, size, modification and change times) and the digest its
/// container entry records of its content (docs/FORMAT.md, "Entry digests"). A file whose status
/// is the same now is taken to hold the same bytes, and is not read (docs/INCREMENTAL.md,
/// "Skipping unchanged sources": why that is safe, and the racy case).
///
/// Kept outside the pack, in a private cache folder of the machine that packs (`0700`, files
/// `0600`), one file per output: the digests are of source files that lie readable on that machine,
/// so they reveal nothing the sources do not, and nothing of them ships.
///
/// A file is remembered only when its modification and change times are older than the pack's
/// start by more than ``racyMargin``: a file changed in the same clock tick as it was read, with its
/// size kept, would otherwise show the status it was read with and keep its old digest (git's
/// "racy clean" problem). Such a file is read and hashed again next time.
package final class SourceStatusCache: @unchecked Sendable {
    /// One remembered file.
    struct Record: Sendable {
        var device: UInt64
        var inode: UInt64
        var size: UInt64
        var modificationTime: Int64
        var changeTime: Int64
        /// The content's digest, as its entry records it, held inline (a million files' records
        /// are one allocation each fewer than with an array).
        @Inline var sha256: [UInt8]

        init(_ status: FileStatus, sha256: [UInt8]) {
            self.init(
                device: status.device, inode: status.inode, size: status.size,
                modificationTime: status.modificationTime, changeTime: status.changeTime, sha256: sha256)
        }

        init(device: UInt64, inode: UInt64, size: UInt64, modificationTime: Int64, changeTime: Int64, sha256: [UInt8]) {
            (self.device, self.inode, self.size) = (device, inode, size)
            (self.modificationTime, self.changeTime) = (modificationTime, changeTime)
            self.sha256 = sha256
        }

        /// Whether `status` is the status this record was taken from.
        func matches(_ status: FileStatus) -> Bool {
            status.kind == .regular && status.device == device && status.inode == inode && status.size == size
                && status.modificationTime == modificationTime && status.changeTime == changeTime
        }
    }

    /// How much older than the pack's start a file's times must be to be remembered: 2 s, the
    /// coarsest timestamp of a file system in use (FAT), and far above a kernel's clock tick.
    package static let defaultRacyMargin: Int64 = 2_000_000_000

    /// The file this cache is kept in.
    package let file: URL
    private let output: String
    private let racyMargin: Int64
    /// When the pack started (ns since the epoch, wall clock), before any source was looked at.
    private let started: Int64
    private let lock = NSLock()
    /// What the last pack remembered, loaded when first asked for (a full pack never asks).
    private(set) lazy var remembered: Remembered = (try? Self.load(file, output: output)) ?? Remembered()
    /// Which of `remembered`'s records were kept unread, and how many.
    private var keptMarks: [Bool] = []
    private var keptCount = 0
    /// The files read by this pack, in the order they were (a path read twice: the later counts).
    private var read: [(path: String, record: Record)] = []

    /// Records sorted by path bytes, the paths in one buffer: ~110 bytes a file, where the
    /// dictionaries they replaced held a bucket per 0.75 records, each holding a record and a key.
    struct Remembered {
        var paths: [UInt8] = []
        /// Where each path ends in `paths`.
        var ends: [Int] = []
        var records: [Record] = []

        /// The position of `path`'s record (binary search over the path bytes), or `nil`.
        func position(of path: String) -> Int? {
            var path = path
            return path.withUTF8 { key in
                paths.withUnsafeBytes { all in
                    var lo = 0, hi = records.count
                    while lo < hi {
                        let mid = (lo + hi) / 2
                        let start = mid == 0 ? 0 : ends[mid - 1]
                        let here = UnsafeRawBufferPointer(rebasing: all[start..<ends[mid]])
                        if here.elementsEqual(key) { return mid }
                        if here.lexicographicallyPrecedes(key) { lo = mid + 1 } else { hi = mid }
                    }
                    return nil
                }
            }
        }

        func pathString(_ i: Int) -> String {
            paths.withUnsafeBytes {
                String(
                    decoding: UnsafeRawBufferPointer(rebasing: $0[(i == 0 ? 0 : ends[i - 1])..<ends[i]]), as: UTF8.self)
            }
        }
    }

    /// The default folder: `$XDG_CACHE_HOME/assetpack/sources`, else `~/.cache/assetpack/sources`
    /// (Linux), the user's caches folder (Apple platforms); `nil` when there is no home.
    package static var defaultFolder: URL? {
        let environment = ProcessInfo.processInfo.environment
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("assetpack/sources")
        }
        #if canImport(Darwin)
        return FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first?
            .appendingPathComponent("assetpack/sources")
        #else
        guard let home = environment["HOME"], home.hasPrefix("/") else { return nil }
        return URL(fileURLWithPath: home).appendingPathComponent(".cache/assetpack/sources")
        #endif
    }

    /// The cache of `output` in `folder`. What the last pack remembered is loaded when first asked
    /// for (nothing when there is no file, or it is unreadable, damaged or of another output: a
    /// cache is never an error).
    /// - Parameter racyMargin: Nanoseconds (tests lower it).
    package init(folder: URL, output: String, racyMargin: Int64 = defaultRacyMargin) {
        let absolute =
            (try? FileSystem.realpath(AtomicFile.folder(of: output))).map {
                $0 + "/" + (output as NSString).lastPathComponent
            } ?? output
        self.output = absolute
        file = folder.appendingPathComponent(String(PathHash.fnv1a(absolute), radix: 16) + ".status")
        self.racyMargin = racyMargin
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        started = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    /// The remembered SHA-256 of the file at `diskPath` (entry `path`) if its status now is the
    /// one remembered; `nil` otherwise (the file must be read).
    package func digest(of path: String, at diskPath: String) -> [UInt8]? {
        guard let record = lock.withLock({ remembered.position(of: path).map { remembered.records[$0] } }),
            let status = try? FileSystem.stat(diskPath), record.matches(status)
        else { return nil }
        return record.sha256
    }

    /// Notes that entry `path` was kept without reading its file (after ``digest(of:at:)``
    /// answered): it is remembered again, as it was.
    package func kept(_ path: String) {
        lock.withLock {
            guard let i = remembered.position(of: path) else { return }
            if keptMarks.isEmpty { keptMarks = Array(repeating: false, count: remembered.records.count) }
            if !keptMarks[i] { (keptMarks[i], keptCount) = (true, keptCount + 1) }
        }
    }

    /// Remembers that entry `path` was read from a file of `status` (taken before it was read)
    /// and had `sha256`, unless its times are too recent to tell a later change from it.
    package func remember(_ path: String, status: FileStatus, sha256: [UInt8]) {
        guard status.kind == .regular, status.modificationTime < started - racyMargin,
            status.changeTime < started - racyMargin
        else { return }
        lock.withLock { read.append((path, Record(status, sha256: sha256))) }
    }

    /// Forgets which files were kept unread: the pack is being written again from the start
    /// (what was read stays remembered: it is true of the files whatever the pack does).
    package func startOver() {
        lock.withLock {
            if keptCount > 0 { keptMarks = Array(repeating: false, count: keptMarks.count) }
            keptCount = 0
        }
    }

    /// How many files were kept without being read (``kept(_:)``).
    package var skipped: Int { lock.withLock { keptCount } }

    /// Writes what this pack remembered (files of the pack just written only), replacing the
    /// previous file, sorted by path; failures are ignored (a cache).
    package func save() {
        let (read, marks) = lock.withLock { (self.read, keptMarks) }
        let folder = file.deletingLastPathComponent().path
        var made = ""
        for part in folder.split(separator: "/") {
            made += "/" + part
            try? FileSystem.mkdir(made, permissions: 0o700)
        }
        // The files read, each path's last reading, sorted by path bytes (as the packer reads
        // them, unless it started over).
        let inOrder = read.indices.dropFirst().allSatisfy {
            read[$0 - 1].path.utf8.lexicographicallyPrecedes(read[$0].path.utf8)
        }
        let order =
            inOrder
            ? Array(read.indices)
            : read.indices.sorted {
                let (a, b) = (read[$0].path.utf8, read[$1].path.utf8)
                return a.elementsEqual(b) ? $0 > $1 : a.lexicographicallyPrecedes(b)
            }
        var readings: [Int] = []
        readings.reserveCapacity(order.count)
        for i in order where readings.last.map({ !read[$0].path.utf8.elementsEqual(read[i].path.utf8) }) ?? true {
            readings.append(i)
        }
        let remembered = marks.isEmpty ? Remembered() : lock.withLock { self.remembered }
        // Written as it is made, 1 MiB at a time: a million files' records are ~95 MB.
        _ = try? AtomicFile.write(file.path, mode: 0o600, exactMode: true, durable: false) { fd in
            var bytes = Array(Self.magic.utf8)
            var offset: UInt64 = 0
            func flush(over limit: Int) throws {
                guard bytes.count > limit else { return }
                try bytes.withUnsafeBytes { try fd.pwriteAll($0, at: offset) }
                offset += UInt64(bytes.count)
                bytes.removeAll(keepingCapacity: true)
            }
            func write(_ path: String, _ record: Record) throws {
                Self.append(&bytes, path)
                for value in [
                    record.device, record.inode, record.size, UInt64(bitPattern: record.modificationTime),
                    UInt64(bitPattern: record.changeTime),
                ] {
                    withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
                }
                bytes += record.sha256
                try flush(over: 1 << 20)
            }
            Self.append(&bytes, output)
            // A merge of the two sorted runs: the files read, and those kept unread (as remembered).
            var r = 0, k = marks.firstIndex(of: true) ?? marks.count
            func nextKept() { k = marks[(k + 1)...].firstIndex(of: true) ?? marks.count }
            while r < readings.count || k < marks.count {
                let keptPath = k < marks.count ? remembered.pathString(k) : nil
                if r < readings.count,
                    keptPath.map({ !$0.utf8.lexicographicallyPrecedes(read[readings[r]].path.utf8) }) ?? true
                {
                    let reading = read[readings[r]]
                    try write(reading.path, reading.record)
                    if let keptPath, keptPath.utf8.elementsEqual(reading.path.utf8) { nextKept() }  // read again
                    r += 1
                } else if let keptPath {
                    try write(keptPath, remembered.records[k])
                    nextKept()
                }
            }
            try flush(over: 0)
        }
    }

    private static let magic = "AssetPack source status 2\n"
    /// A record's bytes after its path: device, inode, size, the two times, the digest.
    private static let recordSize = 5 * 8 + 32

    private static func append(_ bytes: inout [UInt8], _ text: String) {
        let utf8 = Array(text.utf8)
        withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { bytes += $0 }
        bytes += utf8
    }

    private static func load(_ file: URL, output: String) throws -> Remembered {
        let data = try Data(contentsOf: file)
        return try data.withUnsafeBytes { try parse($0, output: output) }
    }

    /// The records of a cache file, which must be sorted by path (strictly): anything else, an
    /// earlier version's file included, is nothing remembered.
    private static func parse(_ data: UnsafeRawBufferPointer, output: String) throws -> Remembered {
        var reader = ByteReader(data, structure: "source status cache")
        guard try reader.bytes(magic.utf8.count) == Array(magic.utf8) else { return Remembered() }
        func text() throws -> [UInt8] {
            let count = Int(try reader.u32())
            guard count <= reader.remaining else { throw AssetPackError(.integrityFailure, "short") }
            return try reader.bytes(count)
        }
        guard try text().elementsEqual(output.utf8) else { return Remembered() }
        // Counted first, so the arrays are the size they need: grown by doubling from an estimate,
        // a million files' records took 152 MB where 80 MB were used.
        var counting = reader
        var count = 0, pathBytes = 0
        while counting.remaining > 0 {
            let length = Int(try counting.u32())
            guard length <= counting.remaining else { throw AssetPackError(.integrityFailure, "short") }
            try counting.skip(length + Self.recordSize)
            count += 1
            pathBytes += length
        }
        var remembered = Remembered()
        remembered.paths.reserveCapacity(pathBytes)
        remembered.ends.reserveCapacity(count)
        remembered.records.reserveCapacity(count)
        var previous: [UInt8] = []
        while reader.remaining > 0 {
            let path = try text()
            guard remembered.records.isEmpty || previous.lexicographicallyPrecedes(path) else { return Remembered() }
            let device = try reader.u64(), inode = try reader.u64(), size = try reader.u64()
            let modified = Int64(bitPattern: try reader.u64()), changed = Int64(bitPattern: try reader.u64())
            remembered.paths += path
            remembered.ends.append(remembered.paths.count)
            remembered.records.append(
                Record(
                    device: device, inode: inode, size: size, modificationTime: modified, changeTime: changed,
                    sha256: try reader.bytes(32)))
            previous = path
        }
        return remembered
    }
}
