import Foundation

/// Runs numbered tasks on worker threads and hands their results to one consumer in task order.
///
/// Workers take tasks in order, so a result the consumer waits for is always running or done.
/// A byte budget bounds memory: a task is started only while the costs of the tasks started and
/// not yet consumed stay within it (a task costlier than the budget runs alone). The consumer
/// owns results once it has taken them.
final class OrderedWorkQueue<Output>: @unchecked Sendable {
    /// Runs task `index` on a worker, with that worker's own `Context`.
    typealias Work<Context> = @Sendable (_ index: Int, _ context: Context) throws -> Output

    private let condition = NSCondition()
    private let count: Int
    private let cost: @Sendable (Int) -> Int
    private let budget: Int
    private var next = 0
    private var inFlight = 0
    private var results: [Int: Result<Output, Error>] = [:]
    private var cancelled = false
    private var running = 0

    /// - Parameters:
    ///   - count: Tasks `0..<count`.
    ///   - budget: Most total cost started and not yet consumed.
    ///   - cost: A task's cost (bytes it holds from start until consumed).
    init(count: Int, budget: Int, cost: @escaping @Sendable (Int) -> Int) {
        self.count = count
        self.budget = budget
        self.cost = cost
    }

    /// Starts `workers` threads; each makes one context and runs tasks with it.
    func start<Context>(workers: Int, context: @escaping @Sendable () -> Context, work: @escaping Work<Context>) {
        condition.lock()
        running = max(1, workers)
        condition.unlock()
        for _ in 0..<max(1, workers) {
            let thread = Thread { [self] in
                let ctx = context()
                run(ctx, work)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    private func run<Context>(_ ctx: Context, _ work: Work<Context>) {
        condition.lock()
        while !cancelled && next < count {
            let c = cost(next)
            if inFlight > 0 && inFlight + c > budget {
                condition.wait()
                continue
            }
            let index = next
            next += 1
            inFlight += c
            condition.unlock()
            let result = Result { try work(index, ctx) }
            condition.lock()
            results[index] = result
            condition.broadcast()
        }
        running -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for task `index`'s result and takes it (call with 0, 1, 2, … in order).
    /// - Throws: What the task threw.
    func take(_ index: Int) throws -> Output {
        condition.lock()
        while results[index] == nil { condition.wait() }
        let result = results.removeValue(forKey: index)!
        inFlight -= cost(index)
        condition.broadcast()
        condition.unlock()
        return try result.get()
    }

    /// Stops handing out tasks and waits until every worker has returned. Call before returning,
    /// on success or failure: tasks may refer to what the caller owns.
    func finish() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        while running > 0 { condition.wait() }
        results.removeAll()
        condition.unlock()
    }
}

/// Lets the pieces of one entry through a step in piece order (a running hash of the plaintext),
/// whichever worker holds them. A piece that fails still passes its turn on.
final class Turnstile: @unchecked Sendable {
    private let condition = NSCondition()
    private var turn = 0

    /// Waits until piece `k`'s turn, runs `body`, and gives the turn to piece `k + 1`.
    func inTurn<T>(_ k: Int, _ body: () throws -> T) rethrows -> T {
        condition.lock()
        while turn < k { condition.wait() }
        condition.unlock()
        defer {
            condition.lock()
            turn = k + 1
            condition.broadcast()
            condition.unlock()
        }
        return try body()
    }

    /// Passes piece `k`'s turn on without running anything (its task failed before its turn).
    func skip(_ k: Int) {
        inTurn(k) {}
    }
}
