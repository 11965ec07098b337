import Foundation

/// Entry path rules shared by the packer, the readers and extraction.
///
/// A stored path is NFC, uses `/`, and has no empty, `.` or `..` components. Lookups
/// normalise the requested path the same way, so `"img\\é.png"` (NFD, backslash)
/// finds the entry `img/é.png`.
public enum EntryPath {
    /// Normalises a path for storage and lookup: Unicode NFC, `\` → `/`, no empty or `.`
    /// components, no leading `/`.
    /// - Parameter path: A path as a user or a file system spells it.
    /// - Returns: The normalised path (possibly empty).
    public static func normalize(_ path: String) -> String {
        let nfc = path.precomposedStringWithCanonicalMapping
        if !nfc.contains("\\") && !nfc.hasPrefix("/") && !nfc.hasPrefix("./") && !nfc.contains("//")
            && !nfc.contains("/./") && !nfc.hasSuffix("/.") && !nfc.hasSuffix("/") && nfc != "."
        {
            return nfc  // fast path: already canonical
        }
        return
            nfc
            .replacingOccurrences(of: "\\", with: "/")
            .split(separator: "/", omittingEmptySubsequences: true)
            .filter { $0 != "." }
            .joined(separator: "/")
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
        if name != normalize(name) { throw refuse("not in normal form") }
        return parts
    }
}
