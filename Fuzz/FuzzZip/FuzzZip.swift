// libFuzzer target: open arbitrary bytes as a zip pack and read every entry with both decoders.
// Built and run by `make fuzz` (-DFUZZING -sanitize=fuzzer,address); a plain build gets a stub.
import AssetPackCore
import AssetPackZip
import Foundation

#if FUZZING
    let scratch = "/dev/shm/assetpack-fuzz-zip-\(getpid()).zip"
    let limits: ReadLimits = {
        var l = ReadLimits()
        l.maxEntries = 10_000
        l.maxEntrySize = 16 << 20
        return l
    }()

    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzZip(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        guard FileManager.default.createFile(atPath: scratch, contents: Data(bytes: data, count: size)) else {
            return 0
        }
        for decoder in ZipPackReader.Decoder.allCases {
            guard
                let reader = try? ZipPackReader(
                    path: scratch, credential: .password("fuzz"), limits: limits, decoder: decoder)
            else { continue }
            for entry in reader.entries.prefix(64) {
                _ = try? reader.read(entry.path)
                _ = try? reader.stream(entry.path) { _ in }
            }
        }
        return 0
    }

    // SwiftPM links executables with `main` aliased to `<Target>_main`; hand control to libFuzzer's driver.
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
    ) -> CInt

    @_cdecl("FuzzZip_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var argc = argc
        var argv = argv
        return LLVMFuzzerRunDriver(&argc, &argv, fuzzZip)
    }
#else
    @main enum FuzzZip {
        static func main() { print("fuzz target: build and run it with `make fuzz`") }
    }
#endif
