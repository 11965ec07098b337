// libFuzzer target: open arbitrary bytes as a container (raw key 32 × 0x07, the seed packs' key)
// and read every entry, whole, streamed and by range. Built and run by `make fuzz`.
import AssetPackContainer
import AssetPackCore
import FuzzSupport
import Foundation

#if FUZZING
let scratch = FuzzScratch("container", ext: "apack")
let key = PackCredential.key([UInt8](repeating: 7, count: 32))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContainer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard scratch.write(data, size),
        let reader = try? ContainerPackReader(path: scratch.path, credential: key)
    else { return 0 }
    for entry in reader.entries.prefix(64) {
        _ = try? reader.read(entry.path)
        _ = try? reader.stream(entry.path) { _ in }
        _ = try? reader.readRange(entry.path, offset: entry.size / 3, count: 5000)
    }
    return 0
}

@_cdecl("FuzzContainer_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv, fuzzContainer)
}
#else
@main enum FuzzContainer {
    static func main() { fuzzStub() }
}
#endif
