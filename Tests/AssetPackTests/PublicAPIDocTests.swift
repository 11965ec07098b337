import Foundation
import Testing

/// docs/API.md and the DocC landing page's topics name every top-level public name of the
/// `AssetPack` product's modules (issue 39: API.md had gone stale, the landing page lacked PackSet).
@Suite struct PublicAPIDocTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `public struct X`, `public enum X`, … at the start of a line (top level) in the modules.
    static func publicNames() throws -> Set<String> {
        let modules = ["AssetPack", "AssetPackCore", "AssetPackZip", "AssetPackContainer", "AssetPackFormat"]
        let pattern = try NSRegularExpression(
            pattern:
                #"^public (?:final )?(?:struct|enum|class|protocol|typealias|actor|func) ([A-Za-z_][A-Za-z0-9_]*)"#,
            options: .anchorsMatchLines)
        var names: Set<String> = []
        for module in modules {
            let folder = root.appendingPathComponent("Sources/\(module)")
            for case let url as URL in FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)!
            where url.pathExtension == "swift" {
                let text = try String(contentsOf: url, encoding: .utf8)
                for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    names.insert(String(text[Range(match.range(at: 1), in: text)!]))
                }
            }
        }
        return names
    }

    @Test func everyPublicNameIsDocumented() throws {
        let names = try Self.publicNames()
        #expect(names.count >= 30, "\(names.sorted())")
        let api = try String(contentsOf: Self.root.appendingPathComponent("docs/API.md"), encoding: .utf8)
        let docc = try String(
            contentsOf: Self.root.appendingPathComponent("Sources/AssetPack/AssetPack.docc/AssetPack.md"),
            encoding: .utf8)
        for name in names.sorted() {
            #expect(api.contains("`\(name)`"), "docs/API.md does not list \(name)")
            #expect(docc.contains("``\(name)``"), "the DocC landing page's topics do not list \(name)")
        }
        #expect(api.contains("## \(names.count) top-level names"), "docs/API.md's count is not \(names.count)")
    }
}
