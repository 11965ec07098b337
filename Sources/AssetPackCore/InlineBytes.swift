/// Up to 32 bytes held inline: a digest, a nonce, a key id. An `[UInt8]` of 32 bytes is a heap
/// block of ~80 bytes and a pointer; a million-file pack's records held two to four per file.
package struct InlineBytes: Hashable, Sendable {
    private var storage: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    package private(set) var count: Int = 0

    package init(_ bytes: [UInt8]) {
        precondition(bytes.count <= 32, "InlineBytes holds at most 32 bytes")
        count = bytes.count
        withUnsafeMutableBytes(of: &storage) { $0.copyBytes(from: bytes) }
    }

    /// The bytes, valid only within `body`.
    package func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: storage) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }

    package var array: [UInt8] { withUnsafeBytes { Array($0) } }

    package static func == (a: InlineBytes, b: InlineBytes) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in x.elementsEqual(y) } }
    }

    package func hash(into hasher: inout Hasher) { withUnsafeBytes { hasher.combine(bytes: $0) } }
}

/// A `[UInt8]` property of at most 32 bytes stored as ``InlineBytes``: reads and writes as an
/// array, and `$name` gives the inline bytes without making one.
@propertyWrapper
package struct Inline: Hashable, Sendable {
    package var projectedValue: InlineBytes

    package init(wrappedValue: [UInt8]) { projectedValue = InlineBytes(wrappedValue) }

    package var wrappedValue: [UInt8] {
        get { projectedValue.array }
        set { projectedValue = InlineBytes(newValue) }
    }
}
