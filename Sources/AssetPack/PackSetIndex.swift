import AssetPackCore
import Foundation

/// The merged list of a ``PackSet``: every path of its members resolved once, when the set is
/// first listed or checked (lookups walk the members instead: `PackSet.resolve`).
///
/// The rules are those of one bottom-first walk (docs/ARCHITECTURE.md, "Pack sets"): a member's
/// deletions, then its entries; a path resolves to the last member that adds it, unless a
/// deletion came after; a deletion of a path no member below adds is an error, and so is a path
/// held in another Unicode form (canonically equivalent, other bytes) than the one below it.
/// The error is the first such walk meets.
///
/// Each member's lists are sorted by UTF-8 bytes already, so the index is a k-way merge of those
/// lists (``MergeHeap``: a heap of the lists by their next path, compared as integers of its
/// first 16 bytes): each path's events come out together, in walk order, and the set's entries
/// come out sorted, with no per-pack hashing and no sort. Only ASCII paths take that way; a
/// non-ASCII path may be spelt several ways, so those are grouped by `String` equality
/// (canonical equivalence) in a dictionary, and a group whose NFC is ASCII (the Kelvin sign,
/// say) joins the merged path it equals.
struct PackSetIndex {
    /// The set's entries, sorted by path bytes, each naming its pack.
    var entries: [EntryInfo] = []

    /// One step of the walk: member `member`'s deletion (`phase` 0) or entry (`phase` 1) at
    /// `position` of that list. Events compare in walk order.
    struct Event: Comparable {
        var member: Int32
        var phase: Int32
        var position: Int32

        static func < (a: Event, b: Event) -> Bool {
            (a.member, a.phase, a.position) < (b.member, b.phase, b.position)
        }
    }

    /// The first rule broken, by walk order.
    private var firstBroken: (event: Event, error: AssetPackError)?
    /// The first rule the walk found broken (its path is left out of ``entries``), if any.
    var firstError: AssetPackError? { firstBroken?.error }

    private let names: [String]
    private let deletions: [[String]]
    private let entryLists: [[EntryInfo]]

    /// Builds the list of `members`, bottom first, recording in ``firstError`` the first deletion
    /// of a path no member below has, or path in another Unicode form, that a bottom-first walk meets.
    init(_ members: [PackSet.Member]) {
        names = members.map(\.name)
        deletions = members.map { $0.reader.deletedPaths }
        entryLists = members.map { Array($0.reader.entries) }

        // The lists in walk order: ASCII paths to the merge, non-ASCII ones set apart.
        var merge = MergeHeap(deletions: deletions, entries: entryLists)
        var odd: [(path: String, event: Event)] = []
        for m in members.indices {
            for phase in 0..<2 {
                for event in merge.add(member: Int32(m), phase: Int32(phase)) { odd.append((path(of: event), event)) }
            }
        }

        // Non-ASCII paths grouped by canonical equivalence (`String` equality); a group equal
        // to an ASCII path joins that path's events when the merge meets it.
        var groups: [String: Int] = [:]
        var oddGroups: [[Event]] = []
        for (path, event) in odd {
            if let g = groups[path] {
                oddGroups[g].append(event)
            } else {
                groups[path] = oddGroups.count
                oddGroups.append([event])
            }
        }
        var joining: [String: [Event]] = [:]
        var alone: [[Event]] = []
        for (representative, g) in groups {
            if let ascii = Self.asciiEquivalent(representative) {
                joining[ascii] = oddGroups[g]
            } else {
                alone.append(oddGroups[g])
            }
        }

        // The merge: ASCII paths come out sorted, each path's events together, in walk order;
        // each path is walked as it comes (or, if a non-ASCII group joins it, once complete).
        var winners: [Event] = []
        winners.reserveCapacity(merge.count)
        var elsewhere: [Event] = []  // winners of non-ASCII groups: sorted, then merged in below
        var key = -1  // the path being walked (its index in the merge)
        var latest: Event?  // its last entry so far
        var live = false  // whether its last event is an entry
        var joined: [Event]?  // its events, when a non-ASCII group joins it
        func settle() {
            if var events = joined {
                events += joining.removeValue(forKey: merge.path(key))!
                if let winner = resolve(events.sorted(), sameBytes: false) { elsewhere.append(winner) }
            } else if live {
                winners.append(latest!)
            }
        }
        while let (i, event) = merge.next() {
            if key < 0 || !merge.same(i, key) {
                if key >= 0 { settle() }
                key = i
                latest = nil
                live = false
                joined = !joining.isEmpty && joining[merge.path(i)] != nil ? [] : nil
            }
            if joined != nil {
                joined!.append(event)
            } else if event.phase == 1 {
                latest = event
                live = true
            } else if latest == nil {
                failDeletingNothing(event)
            } else {
                live = false
            }
        }
        if key >= 0 { settle() }
        for events in alone + Array(joining.values) {
            if let winner = resolve(events, sameBytes: false) { elsewhere.append(winner) }
        }

        // The entries: the merged winners, the others merged in by their bytes.
        elsewhere.sort { Self.compare(path(of: $0), path(of: $1)) < 0 }
        entries.reserveCapacity(winners.count + elsewhere.count)
        var e = 0
        for winner in winners {
            while e < elsewhere.count, Self.compare(path(of: elsewhere[e]), path(of: winner)) < 0 {
                append(elsewhere[e])
                e += 1
            }
            append(winner)
        }
        for winner in elsewhere[e...] { append(winner) }
    }

    private mutating func append(_ event: Event) {
        var info = entryLists[Int(event.member)][Int(event.position)]
        info.pack = names[Int(event.member)]
        entries.append(info)
    }

    /// The path an event names, as its member stores it.
    private func path(of event: Event) -> String {
        event.phase == 0
            ? deletions[Int(event.member)][Int(event.position)]
            : entryLists[Int(event.member)][Int(event.position)].path
    }

    /// Walks one path's events (in walk order): the entry that serves it, or `nil` when it ends
    /// deleted or breaks a rule (recorded in ``firstBroken`` if it is
    /// the first so far). `sameBytes`: every event names the same bytes (no forms to compare).
    private mutating func resolve(_ events: [Event], sameBytes: Bool) -> Event? {
        var latest: Event?
        var live = false
        for event in events {
            if let firstBroken, firstBroken.event < event { return nil }  // an earlier error wins
            if event.phase == 0 {
                guard let below = latest else {
                    failDeletingNothing(event)
                    return nil
                }
                if !sameBytes, !checkSameBytes(event, below) { return nil }
                live = false
            } else {
                if !sameBytes, let below = latest, !checkSameBytes(event, below) { return nil }
                latest = event
                live = true
            }
        }
        if live { return latest }
        return nil
    }

    /// Records the error of a deletion of a path no member below has.
    private mutating func failDeletingNothing(_ event: Event) {
        let path = path(of: event)
        fail(
            event,
            AssetPackError(
                .integrityFailure,
                "\(names[Int(event.member)]) deletes \(EntryPath.printable(path)), which no pack below it has",
                path: path))
    }

    /// Whether `event` names its path in the bytes of `below` (else records the error).
    private mutating func checkSameBytes(_ event: Event, _ below: Event) -> Bool {
        let path = path(of: event)
        guard Self.compare(self.path(of: below), path) != 0 else { return true }
        fail(
            event,
            AssetPackError(
                .integrityFailure,
                "\(names[Int(below.member)]) and \(names[Int(event.member)]) hold \(EntryPath.printable(path)) in different Unicode forms",
                path: path))
        return false
    }

    private mutating func fail(_ event: Event, _ error: AssetPackError) {
        if firstBroken.map({ event < $0.event }) ?? true { firstBroken = (event, error) }
    }

    // MARK: - Bytes

    /// Whether `path` is all ASCII.
    static func isASCII(_ path: String) -> Bool {
        path.utf8.withContiguousStorageIfAvailable { bytes in
            var any: UInt8 = 0
            for byte in bytes { any |= byte }
            return any < 0x80
        } ?? path.utf8.allSatisfy { $0 < 0x80 }
    }

    /// `a` against `b` in UTF-8 byte order: negative, zero or positive.
    static func compare(_ a: String, _ b: String) -> Int {
        let fast = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y -> Int in
                let n = min(x.count, y.count)
                if n > 0 {
                    let c = memcmp(x.baseAddress!, y.baseAddress!, n)
                    if c != 0 { return Int(c) }
                }
                return x.count - y.count
            }
        }
        if let fast, let fast { return fast }
        return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : a.utf8.elementsEqual(b.utf8) ? 0 : 1
    }

    /// The ASCII path canonically equivalent to the non-ASCII `path`, if there is one. Only a
    /// scalar whose canonical decomposition is a single ASCII scalar (the Kelvin sign, the Greek
    /// question mark, …) makes one, and every such scalar is a full composition exclusion: a
    /// path with any other non-ASCII scalar is never normalised.
    static func asciiEquivalent(_ path: String) -> String? {
        guard path.unicodeScalars.allSatisfy({ $0.isASCII || $0.properties.isFullCompositionExclusion }) else {
            return nil
        }
        let nfc = EntryPath.nfc(path)
        return isASCII(nfc) ? nfc : nil
    }
}

/// The k-way merge: a min-heap of the lists' next paths (ties by list, so that equal paths come
/// out in walk order). A path compares by its first 16 bytes, as two big-endian integers, and its
/// length; past those 16 bytes, by `memcmp`.
private struct MergeHeap {
    /// One ASCII path of a list: its first 16 bytes (big-endian, zero-padded), length and event.
    struct Item {
        var high: UInt64
        var low: UInt64
        var length: Int
        var event: PackSetIndex.Event
    }
    /// A list's next path in the heap: that path's key and its index in ``items``.
    struct Node {
        var high: UInt64
        var low: UInt64
        var length: Int
        var item: Int
        var list: Int
    }

    private let deletions: [[String]]
    private let entries: [[EntryInfo]]
    /// Every list's ASCII paths, list after list, each list's in byte order.
    private var items: [Item] = []
    /// Each list's end in ``items``.
    private var end: [Int] = []
    private var heap: [Node] = []

    init(deletions: [[String]], entries: [[EntryInfo]]) {
        self.deletions = deletions
        self.entries = entries
        items.reserveCapacity(entries.reduce(0) { $0 + $1.count } + deletions.reduce(0) { $0 + $1.count })
    }

    /// The number of paths in the merge.
    var count: Int { items.count }

    /// Path `i` of the merge, as its member stores it.
    func path(_ i: Int) -> String { path(of: items[i].event) }

    private func path(of event: PackSetIndex.Event) -> String {
        event.phase == 0
            ? deletions[Int(event.member)][Int(event.position)] : entries[Int(event.member)][Int(event.position)].path
    }

    /// Adds a member's list (deletions or entries) to the merge: its ASCII paths (sorted here if
    /// the reader did not sort them).
    /// - Returns: The events of the paths left out: the non-ASCII ones.
    mutating func add(member: Int32, phase: Int32) -> [PackSetIndex.Event] {
        let start = items.count
        var odd: [PackSetIndex.Event] = []
        let count = phase == 0 ? deletions[Int(member)].count : entries[Int(member)].count
        var sorted = true
        for position in 0..<count {
            let event = PackSetIndex.Event(member: member, phase: phase, position: Int32(position))
            guard let (high, low, length) = Self.key(path(of: event)) else {
                odd.append(event)
                continue
            }
            let item = Item(high: high, low: low, length: length, event: event)
            if sorted, items.count > start, compare(items[items.count - 1], item) > 0 { sorted = false }
            items.append(item)
        }
        guard items.count > start else { return odd }
        if !sorted {  // stable, so that repeated paths stay in list order
            let order = (start..<items.count).sorted { a, b in
                let c = compare(items[a], items[b])
                return c < 0 || (c == 0 && a < b)
            }
            items.replaceSubrange(start..., with: order.map { items[$0] })
        }
        end.append(items.count)
        heap.append(node(start, list: end.count - 1))
        var i = heap.count - 1
        while i > 0, less(heap[i], heap[(i - 1) / 2]) {
            heap.swapAt(i, (i - 1) / 2)
            i = (i - 1) / 2
        }
        return odd
    }

    /// The least next path over the lists (its index and event), and moves that list on.
    mutating func next() -> (Int, PackSetIndex.Event)? {
        guard let top = heap.first else { return nil }
        if top.item + 1 < end[top.list] {
            heap[0] = node(top.item + 1, list: top.list)
        } else {
            heap[0] = heap[heap.count - 1]
            heap.removeLast()
        }
        // Sift down, on the buffer (no uniqueness check per step) of the heap moved out of self.
        var nodes: [Node] = []
        swap(&nodes, &heap)
        defer { swap(&nodes, &heap) }
        nodes.withUnsafeMutableBufferPointer { heap in
            var i = 0
            while true {
                let left = 2 * i + 1
                guard left < heap.count else { break }
                let child = left + 1 < heap.count && less(heap[left + 1], heap[left]) ? left + 1 : left
                guard less(heap[child], heap[i]) else { break }
                heap.swapAt(i, child)
                i = child
            }
        }
        return (top.item, items[top.item].event)
    }

    /// Whether paths `i` and `j` of the merge are the same bytes.
    func same(_ i: Int, _ j: Int) -> Bool { compare(items[i], items[j]) == 0 }

    private func node(_ item: Int, list: Int) -> Node {
        Node(high: items[item].high, low: items[item].low, length: items[item].length, item: item, list: list)
    }

    private func less(_ a: Node, _ b: Node) -> Bool {
        if a.high != b.high { return a.high < b.high }
        if a.low != b.low { return a.low < b.low }
        let c = a.length <= 16 && b.length <= 16 ? a.length - b.length : compareWhole(a.item, b.item)
        return c < 0 || (c == 0 && a.list < b.list)
    }

    /// Two paths in UTF-8 byte order: negative, zero or positive.
    private func compare(_ a: Item, _ b: Item) -> Int {
        if a.high != b.high { return a.high < b.high ? -1 : 1 }
        if a.low != b.low { return a.low < b.low ? -1 : 1 }
        // Equal first 16 bytes (zero-padded): a path that ends within them is a prefix of the other.
        if a.length <= 16 && b.length <= 16 { return a.length - b.length }
        return PackSetIndex.compare(path(of: a.event), path(of: b.event))
    }

    private func compareWhole(_ i: Int, _ j: Int) -> Int {
        PackSetIndex.compare(path(of: items[i].event), path(of: items[j].event))
    }

    /// An ASCII path's first 16 bytes as two big-endian integers (zero-padded), and its length;
    /// `nil` for a path that is not ASCII.
    static func key(_ path: String) -> (UInt64, UInt64, Int)? {
        func read(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64, Int)? {
            var words: (UInt64, UInt64) = (0, 0)
            let raw = UnsafeRawBufferPointer(bytes)
            withUnsafeMutableBytes(of: &words) {
                $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[0..<min(raw.count, 16)]))
            }
            var any = words.0 | words.1
            var i = 16
            while i + 8 <= raw.count {
                any |= raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                i += 8
            }
            while i < raw.count {
                any |= UInt64(raw[i])
                i += 1
            }
            guard any & 0x8080_8080_8080_8080 == 0 else { return nil }
            return (UInt64(bigEndian: words.0), UInt64(bigEndian: words.1), raw.count)
        }
        if let fast = path.utf8.withContiguousStorageIfAvailable(read) { return fast }
        return Array(path.utf8).withUnsafeBufferPointer(read)
    }
}
