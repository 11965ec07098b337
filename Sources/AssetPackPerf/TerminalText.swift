/// Text for fixed-width tables on a terminal: how many columns a string takes, and padding by
/// columns rather than by characters, so that CJK names (two columns each) and names with
/// combining marks (none) keep the columns after them aligned. Used by the perf report's text
/// renderer and the CLI's tables (which links this module for `perf` anyway); no library an app
/// links needs it.
package enum TerminalText {
    /// The terminal columns `text` occupies: East Asian wide and fullwidth scalars take two,
    /// combining marks and zero-width characters none, everything else one. (Control characters
    /// are expected to be escaped first, see ``EntryPath/printable(_:)``.)
    package static func width(_ text: some StringProtocol) -> Int {
        text.unicodeScalars.reduce(0) { $0 + width(of: $1) }
    }

    /// The columns one scalar takes.
    package static func width(of scalar: Unicode.Scalar) -> Int {
        let v = scalar.value
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if v == 0x200B { return 0 }
        switch v {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
            0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }

    /// `text` padded with spaces to `columns` terminal columns (left-aligned, or right-aligned
    /// when `right`); text already as wide or wider is returned unchanged.
    package static func pad(_ text: String, _ columns: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, columns - width(text)))
        return right ? fill + text : text + fill
    }
}
