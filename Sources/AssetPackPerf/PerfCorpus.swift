import AssetPack
import Foundation

/// Synthetic, deterministic asset trees for `assetpack perf --corpus`.
///
/// The same name always produces byte-identical files (SplitMix64 with fixed seeds), so
/// runs on different days or machines read the same data.
public enum PerfCorpus: String, Sendable, CaseIterable {
    /// The standard corpus (~151 MiB, 1013 files):
    /// - `small/0000.bin` … `small/0999.bin`: 1000 × 4 KiB, incompressible (stored);
    /// - `json/*.json`: 10 JSON-like text files from 512 B to 8 MiB (deflated), one or more per size class;
    /// - `media/texture.png`: 1 MiB of incompressible bytes under a media extension (stored);
    /// - `big/random.bin`: 64 MiB incompressible (stored);
    /// - `big/text.json`: 64 MiB compressible JSON-like text (deflated).
    case standard

    /// The files of the corpus: path and size, in writing order.
    public var layout: [(path: String, size: Int)] {
        switch self {
        case .standard:
            var files: [(String, Int)] = (0..<1000).map { (String(format: "small/%04d.bin", $0), 4 << 10) }
            let jsonSizes = [
                512, 2 << 10, 16 << 10, 48 << 10, 200 << 10, 512 << 10, 900 << 10, 2 << 20, 5 << 20, 8 << 20,
            ]
            for (i, size) in jsonSizes.enumerated() {
                files.append(
                    (
                        String(
                            format: "json/doc-%02d-%@.json", i,
                            PerfFormat.bytes(UInt64(size)).replacingOccurrences(of: " ", with: "")), size
                    ))
            }
            files.append(("media/texture.png", 1 << 20))
            files.append(("big/random.bin", 64 << 20))
            files.append(("big/text.json", 64 << 20))
            return files
        }
    }

    /// Writes the corpus below `directory` (created if needed).
    /// - Returns: The number of files written.
    /// - Throws: `.io` when a file cannot be written.
    @discardableResult
    public func write(to directory: URL) throws -> Int {
        var count = 0
        for (index, file) in layout.enumerated() {
            let url = directory.appendingPathComponent(file.path)
            do {
                try FileManager.default.createDirectory(
                    at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                let seed = UInt64(index + 1) &* 0x100_0000_01B3
                let bytes =
                    file.path.hasSuffix(".json")
                    ? Self.jsonLikeBytes(file.size, seed: seed) : Self.randomBytes(file.size, seed: seed)
                try Data(bytes).write(to: url)
            } catch let error as AssetPackError {
                throw error
            } catch {
                throw AssetPackError(.io, "cannot write \(url.path): \(error.localizedDescription)")
            }
            count += 1
        }
        return count
    }

    /// Incompressible bytes from SplitMix64.
    public static func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { raw in
            var i = 0
            while i + 8 <= count {
                raw.storeBytes(of: rng.next().littleEndian, toByteOffset: i, as: UInt64.self)
                i += 8
            }
            var last = rng.next()
            while i < count {
                raw[i] = UInt8(truncatingIfNeeded: last)
                last >>= 8
                i += 1
            }
        }
        return out
    }

    /// JSON-like text (records of keys, numbers, words); deflates to roughly a fifth to a third.
    public static func jsonLikeBytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        let words = [
            "asset", "pack", "level", "tile", "enemy", "sprite", "sound", "music", "atlas", "frame", "shader",
            "mesh", "material", "font", "glyph", "locale", "quest", "item", "weapon", "armor",
        ].map { Array($0.utf8) }
        var out: [UInt8] = []
        out.reserveCapacity(count + 256)
        out.append(contentsOf: "{\"records\": [\n".utf8)
        var id = 0
        while out.count < count {
            let r = rng.next()
            let name = words[Int(r % UInt64(words.count))]
            let kind = words[Int((r >> 8) % UInt64(words.count))]
            out.append(contentsOf: "  {\"id\": \(id), \"name\": \"".utf8)
            out.append(contentsOf: name)
            out.append(contentsOf: "_\(r >> 48)\", \"kind\": \"".utf8)
            out.append(contentsOf: kind)
            out.append(
                contentsOf:
                    "\", \"x\": \((r >> 16) & 0xFFF), \"y\": \((r >> 28) & 0xFFF), \"scale\": 0.\((r >> 40) & 0xFF), \"visible\": \(r & 1 == 0 ? "true" : "false")},\n"
                    .utf8)
            id += 1
        }
        return Array(out.prefix(count))
    }
}
