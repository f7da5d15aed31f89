// A native prefetcher: a background thread that hands out batches; closing it while a
// batch is in flight throws in that thread (no handler there: std::terminate).
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
static std::atomic<int> in_flight{0};
static std::atomic<bool> closing{false};
struct Prefetcher {
  std::thread t;
  ~Prefetcher() {
    closing = true;
    if (t.joinable()) t.join();
  }
};
static Prefetcher P;
static void loop() {
  while (true) {
    if (closing) {
      if (in_flight) throw std::runtime_error("prefetcher closed with a batch in flight");
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
extern "C" void prefetch_start() { P.t = std::thread(loop); }
extern "C" void prefetch_take() { in_flight = 1; }
extern "C" void prefetch_done() { in_flight = 0; }
