import Foundation

/// Entry path rules shared by the packer, the readers and extraction.
///
/// A stored path is NFC, uses `/`, and has no empty, `.` or `..` components. Lookups
/// normalise the requested path the same way, so `"img\\é.png"` (NFD, backslash)
/// finds the entry `img/é.png`.
public enum EntryPath {
    /// The entries of `entries` below `folder` (normalised like a path first), in their order:
    /// those whose normalised path starts with the folder followed by `/`. Byte comparison, so
    /// folder `a` never holds `ab/c`; an empty folder holds everything.
    public static func entries<Entries: Collection<EntryInfo>>(_ entries: Entries, under folder: String)
        -> [EntryInfo]
    {
        let folder = normalize(folder)
        if folder.isEmpty { return Array(entries) }
        let prefix = Array(folder.utf8) + [UInt8(ascii: "/")]
        return entries.filter { normalize($0.path).utf8.starts(with: prefix) }
    }

    /// Normalises a path for storage and lookup: Unicode NFC, `\` → `/`, no empty or `.`
    /// components, no leading `/`.
    /// - Parameter path: A path as a user or a file system spells it.
    /// - Returns: The normalised path (possibly empty).
    public static func normalize(_ path: String) -> String {
        // Fast path, no Foundation: ASCII is already NFC, and a byte scan tells whether any
        // separator needs tidying. Opening a 100,000-entry zip normalises every name.
        if isCanonicalASCII(path) { return path }
        let nfc = path.precomposedStringWithCanonicalMapping
        if isCanonical(nfc.utf8) { return nfc }
        return
            nfc
            .replacingOccurrences(of: "\\", with: "/")
            .split(separator: "/", omittingEmptySubsequences: true)
            .filter { $0 != "." }
            .joined(separator: "/")
    }

    /// A zip entry's stored name without the `./` in front that some writers put there
    /// (libarchive's `bsdtar --format zip` names every entry `./a.txt`): `a.txt` is the name
    /// `list` shows, `cat` finds and `extract` writes, as Info-ZIP and 7-Zip read it. Only
    /// leading `./` components go; a `.` or `..` further in stays, for extraction to refuse.
    /// - Parameter name: A name as stored.
    /// - Returns: The name without its leading `./` (repeated ones too).
    package static func withoutLeadingDotSlash(_ name: String) -> String {
        guard name.hasPrefix("./") else { return name }
        var rest = Substring(name)
        while rest.hasPrefix("./") { rest = rest.dropFirst(2) }
        return String(rest)
    }

    /// `text` in Unicode NFC; ASCII (always NFC) returns at once, without Foundation.
    package static func nfc(_ text: String) -> String {
        text.utf8.allSatisfy { $0 < 0x80 } ? text : text.precomposedStringWithCanonicalMapping
    }

    /// Whether `path` is ASCII with canonical separators (so ``normalize(_:)`` returns it unchanged).
    private static func isCanonicalASCII(_ path: String) -> Bool {
        path.utf8.allSatisfy { $0 < 0x80 } && isCanonical(path.utf8)
    }

    /// Whether the UTF-8 bytes `path` are a path ``normalize(_:)`` leaves as it is, told from the
    /// bytes alone: ASCII, with canonical separators (no `String` made: the zip reader asks it of
    /// every name at open).
    package static func isCanonicalASCII(bytes path: UnsafeRawBufferPointer) -> Bool {
        // A concrete type: a generic here is not specialised across modules, and ran 20 times slower.
        path.allSatisfy { $0 < 0x80 } && isCanonical(path)
    }

    /// Whether the separators of `path` are canonical: no `\`, no leading `/` or `./`, no `//`,
    /// no `/./`, no trailing `/` or `/.`, not `.`.
    private static func isCanonical<Bytes: Sequence<UInt8>>(_ path: Bytes) -> Bool {
        var previous: UInt8 = UInt8(ascii: "/")  // as if preceded by a separator
        var beforePrevious: UInt8 = UInt8(ascii: "/")
        for byte in path {
            if byte == UInt8(ascii: "\\") { return false }
            if byte == UInt8(ascii: "/") {
                if previous == UInt8(ascii: "/") { return false }  // leading "/" or "//"
                if previous == UInt8(ascii: "."), beforePrevious == UInt8(ascii: "/") { return false }  // "./" or "/./"
            }
            beforePrevious = previous
            previous = byte
        }
        if previous == UInt8(ascii: "/") { return false }  // trailing "/" (or empty: "" is canonical below)
        if previous == UInt8(ascii: "."), beforePrevious == UInt8(ascii: "/") { return false }  // "." or "/."
        return true
    }

    /// The longest entry name extraction accepts, in UTF-8 bytes (Linux's PATH_MAX less the NUL).
    /// An extractor must also check the name joined to its target directory.
    public static let maxPathBytes = 4095

    /// The path as a person should see it in a table or a message: control characters (C0, DEL,
    /// C1) and the bidirectional overrides that can reorder a line are written as `\u{…}` escapes,
    /// so a name cannot forge a table row or split an error over lines. `--json` output stays exact.
    public static func printable(_ path: String) -> String {
        guard path.unicodeScalars.contains(where: needsEscape) else { return path }
        var out = ""
        for scalar in path.unicodeScalars {
            out += needsEscape(scalar) ? scalar.escaped(asASCII: true) : String(scalar)
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// Checks that a stored entry name is safe to create below an extraction directory.
    ///
    /// Rejects empty names, absolute paths, drive letters, backslashes, NUL and other
    /// control characters, and `.`/`..` components.
    /// - Parameter name: The entry name as stored in the pack.
    /// - Returns: The path's components, each safe as a single file-name component.
    /// - Throws: `AssetPackError` with code `.invalidArgument` naming the entry.
    public static func safeComponents(_ name: String) throws -> [String] {
        func refuse(_ why: String) -> AssetPackError {
            AssetPackError(.invalidArgument, "unsafe entry name (\(why)); refusing to extract it", path: name)
        }
        if name.isEmpty { throw refuse("empty") }
        if name.hasPrefix("/") { throw refuse("absolute path") }
        if name.contains("\\") { throw refuse("backslash") }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw refuse("control character")
        }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if let first = parts.first, first.count >= 2, first.dropFirst().first == ":" {
            throw refuse("drive letter")
        }
        for part in parts {
            if part.isEmpty || part == "." || part == ".." { throw refuse("'\(part)' component") }
            if part.utf8.count > 255 { throw refuse("component longer than 255 bytes") }
        }
        if name.utf8.count > maxPathBytes { throw refuse("longer than \(maxPathBytes) bytes") }
        if name != normalize(name) { throw refuse("not in normal form") }
        return parts
    }
}
