/// A pack's entries, sorted by path (UTF-8 byte order), as ``PackReader/entries`` lists them.
///
/// A list, not an array: a reader whose index is read in place (container version 8) decodes an
/// entry when it is asked for, so opening a pack of a million entries makes no million objects
/// (docs/FORMAT.md, "Version 8"). Iterating, counting and indexing work as on an array;
/// `Array(reader.entries)` makes one.
public struct EntryList: RandomAccessCollection, Sendable, Equatable, Encodable {
    public typealias Index = Int
    public typealias Element = EntryInfo

    private let storage: Storage

    private enum Storage: Sendable {
        case array([EntryInfo])
        case decoded(count: Int, entry: @Sendable (Int) -> EntryInfo)
        case counted(count: @Sendable () -> Int, entry: @Sendable (Int) -> EntryInfo)
    }

    /// The entries of `array` (already sorted by the reader).
    package init(_ array: [EntryInfo]) { storage = .array(array) }

    /// `count` entries, the `i`th made by `entry(i)` when it is asked for.
    package init(count: Int, entry: @escaping @Sendable (Int) -> EntryInfo) {
        storage = .decoded(count: count, entry: entry)
    }

    /// `count()` entries (asked for when the list is first counted, and again each time: the
    /// caller keeps it cheap), the `i`th made by `entry(i)` when it is asked for.
    package init(count: @escaping @Sendable () -> Int, entry: @escaping @Sendable (Int) -> EntryInfo) {
        storage = .counted(count: count, entry: entry)
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int {
        switch storage {
        case .array(let a): a.count
        case .decoded(let count, _): count
        case .counted(let count, _): count()
        }
    }

    public subscript(position: Int) -> EntryInfo {
        switch storage {
        case .array(let a): return a[position]
        case .decoded(let count, let entry):
            precondition(position >= 0 && position < count, "EntryList index out of range")
            return entry(position)
        case .counted(let count, let entry):
            precondition(position >= 0 && position < count(), "EntryList index out of range")
            return entry(position)
        }
    }

    public static func == (lhs: EntryList, rhs: EntryList) -> Bool { lhs.elementsEqual(rhs) }

    /// Encodes as the array of entries.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        for e in self { try container.encode(e) }
    }
}
