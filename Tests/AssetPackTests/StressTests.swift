import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// Many threads reading random entries from one open pack, every byte checked. Run under
/// ThreadSanitizer (`make tsan`) and AddressSanitizer (`make asan`) as well as plainly.
@Suite(.slow) struct StressTests {
    @Test(arguments: PackFormat.allCases)
    func randomConcurrentReadsFromOneOpenPack(format: PackFormat) throws {
        let dir = TemporaryDirectory()
        var files = sampleTree()
        for i in 0..<40 { files["many/\(i).bin"] = testBytes(1000 + i * 997, seed: UInt64(i)) }
        files["big/chunked.bin"] = testBytes(3 << 20, seed: 99)  // several container chunks, decrypted in parallel
        let tree = files
        let pack = try BackendConformanceTests.makePack(format, tree, in: dir)
        let reader = try AssetPacks.open(pack, credential: .password(BackendConformanceTests.password))
        let paths = tree.keys.sorted()
        let failures = Counter()
        let threads = 8
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var rng = SplitMix64(seed: UInt64(thread))
            for _ in 0..<60 {
                let path = paths[Int(rng.next() % UInt64(paths.count))]
                do {
                    if rng.next() % 4 == 0 {
                        var streamed: [UInt8] = []
                        try reader.stream(path) { streamed.append(contentsOf: $0) }
                        if streamed != tree[path] { failures.increment() }
                    } else if try reader.read(path) != tree[path] {
                        failures.increment()
                    }
                } catch {
                    failures.increment()
                }
            }
        }
        #expect(failures.value == 0)
    }
}
