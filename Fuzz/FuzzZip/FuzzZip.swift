// libFuzzer target: open arbitrary bytes as a zip pack and read every entry with both decoders.
// Built and run by `make fuzz` (-DFUZZING -sanitize=fuzzer,address); a plain build gets a stub.
import AssetPackCore
import FuzzSupport
import AssetPackZip
import Foundation

#if FUZZING
let scratch = FuzzScratch("zip", ext: "zip")
let limits: ReadLimits = {
    var l = ReadLimits()
    l.maxEntries = 10_000
    l.maxEntrySize = 16 << 20
    return l
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzZip(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard scratch.write(data, size) else {
        return 0
    }
    for decoder in ZipPackReader.Decoder.allCases {
        guard
            let reader = try? ZipPackReader(
                path: scratch.path, credential: .password("fuzz"), limits: limits, decoder: decoder)
        else { continue }
        for entry in reader.entries.prefix(64) {
            _ = try? reader.read(entry.path)
            _ = try? reader.stream(entry.path) { _ in }
        }
    }
    return 0
}

// SwiftPM links executables with `main` aliased to `<Target>_main`; hand control to libFuzzer's driver.

@_cdecl("FuzzZip_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv, fuzzZip)
}
#else
@main enum FuzzZip {
    static func main() { fuzzStub() }
}
#endif
