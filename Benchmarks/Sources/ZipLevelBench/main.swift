import AssetPackCore
import AssetPackZip
import Foundation

// `ZipLevelBench TREE OUT.zip LEVEL`: one fresh WinZip AES-256 zip pack of TREE at libdeflate level
// LEVEL (1-12), as `assetpack pack --format zip --fresh` writes it but with the level set directly:
// the level sweep behind docs/PERFORMANCE.md, "Compression levels" (make bench-pack runs it under
// hyperfine). The password comes from ASSETPACK_PASSWORD (a throwaway benchmark password).

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 3, let level = Int32(arguments.last!), (1...12).contains(level),
    let password = ProcessInfo.processInfo.environment["ASSETPACK_PASSWORD"], !password.isEmpty
else {
    FileHandle.standardError.write(Data("usage: ASSETPACK_PASSWORD=... ZipLevelBench TREE OUT.zip LEVEL(1-12)\n".utf8))
    exit(64)
}
let tree = arguments[arguments.startIndex]
let output = arguments[arguments.startIndex + 1]
var options = PackOptions()
options.credential = .password(password)
options.fresh = true
var writer = ZipPackWriter()
writer.level = level
do {
    try writer.write(
        try SourceTree.scan(root: URL(fileURLWithPath: tree), includeHidden: false), to: output, options: options)
} catch {
    FileHandle.standardError.write(Data("ZipLevelBench: \(error)\n".utf8))
    exit(1)
}
