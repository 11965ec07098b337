// libFuzzer target: the zip structure checks (end record, zip64, central records, overlap,
// local headers) on arbitrary bytes held in memory. Built and run by `make fuzz`
// (-DFUZZING -sanitize=fuzzer,address); a plain build gets a stub.
import AssetPackCore
import FuzzSupport
import AssetPackZip

#if FUZZING
let limits: ReadLimits = {
    var l = ReadLimits()
    l.maxEntries = 10_000
    l.maxIndexSize = 1 << 20
    return l
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzZipStructure(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let read: (UInt64, Int) throws -> [UInt8] = { offset, count in
        guard count >= 0, offset <= UInt64(size), UInt64(count) <= UInt64(size) - offset else {
            throw AssetPackError(.integrityFailure, "zip is truncated")
        }
        return Array(bytes[Int(offset)..<Int(offset) + count])
    }
    guard let structure = try? ZipStructure(fileSize: UInt64(size), limits: limits, read: read) else { return 0 }
    for index in structure.records.indices.prefix(256) {
        _ = try? structure.checkLocalHeader(index, read: read)
    }
    return 0
}

// SwiftPM links executables with `main` aliased to `<Target>_main`; hand control to libFuzzer's driver.

@_cdecl("FuzzZipStructure_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    runFuzzer(argc, argv, fuzzZipStructure)
}
#else
@main enum FuzzZipStructure {
    static func main() { fuzzStub() }
}
#endif
