// Measured curves, alpha-beta fits and collective cost models.

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "format/metrics.h"
#include "hw/collective_cost.h"
#include "hw/collective_model.h"
#include "hw/nccl_calibration.h"
#include "hw/curve.h"

namespace trainsim::hw {
namespace {

// An exact ring all-reduce curve on n ranks: t = 2(n-1) alpha + 2(n-1)/n S / busbw.
std::vector<CurvePoint> ring_curve(int n, double alpha, double busbw) {
  std::vector<CurvePoint> pts;
  for (double s = 1024; s <= 64.0 * 1024 * 1024; s *= 8) {
    pts.push_back(CurvePoint{s, 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * s / busbw});
  }
  return pts;
}

TEST(MeasuredCurve, HitsMeasuredPointsExactly) {
  const std::vector<CurvePoint> pts = {{1000, 3e-6}, {8000, 5e-6}, {64000, 20e-6}, {512000, 90e-6}};
  const MeasuredCurve curve(pts);
  for (const CurvePoint& p : pts) EXPECT_EQ(curve.time_at(p.bytes), p.time_s);
}

TEST(MeasuredCurve, InterpolatesInLogLogSpace) {
  // Between (1000 B, 1 us) and (100000 B, 100 us) the log-log line is t = S * 1e-9 s/B, so at the
  // geometric midpoint 10000 B: 10 us (a linear interpolation would give 9.1 us).
  const MeasuredCurve curve({{1000, 1e-6}, {100000, 100e-6}});
  EXPECT_NEAR(curve.time_at(10000), 10e-6, 1e-15);
}

TEST(MeasuredCurve, ExtrapolatesWithTheFittedSlopeAndStaysContinuous) {
  const std::vector<CurvePoint> pts = ring_curve(2, 5e-6, 10e9);
  const MeasuredCurve curve(pts);
  // An exact affine curve is fitted exactly (slope 2(n-1)/n / busbw = 1/10e9 s/B), so beyond the
  // last point the curve continues the same line: t(4 x S_last) = t(S_last) + 3 S_last / 10e9.
  const double s_last = pts.back().bytes;
  EXPECT_NEAR(curve.time_at(4 * s_last), pts.back().time_s + 3 * s_last / 10e9, 1e-12);
  // Below the first point it also follows the line (never below zero).
  EXPECT_NEAR(curve.time_at(512), pts.front().time_s - 512 / 10e9, 1e-15);
  EXPECT_EQ(curve.time_at(0), 0.0);
}

TEST(MeasuredCurve, RejectsMalformedPoints) {
  EXPECT_THROW(MeasuredCurve({}), std::invalid_argument);
  EXPECT_THROW(MeasuredCurve({{100, 1e-6}, {100, 2e-6}}), std::invalid_argument);
  EXPECT_THROW(MeasuredCurve({{100, -1e-6}}), std::invalid_argument);
}

TEST(MeasuredCurve, SegmentsTouchingZeroAreLinear) {
  // A 0-byte point (time 0) has no logarithm: from (0, 0) to (1000, 1 us) the curve is linear,
  // 0.5 us at 500 B; the fit uses the points with bytes and time > 0 only.
  const MeasuredCurve curve({{0, 0}, {1000, 1e-6}, {2000, 2e-6}});
  EXPECT_DOUBLE_EQ(curve.time_at(500), 0.5e-6);
  EXPECT_NEAR(curve.fit().slope_s_per_byte, 1e-9, 1e-21);
}

TEST(AlphaBetaFit, RecoversAlphaAndBusBandwidthFromAnExactRingCurve) {
  // 4 ranks, alpha 7 us, busbw 80 GB/s: the fit gives a = 2*3*7 us = 42 us and
  // b = (2*3/4) / 80e9 s/B; mapped back: alpha = a / 6, busbw = 6 / (4 b).
  const LinearFit fit = fit_time_vs_bytes(ring_curve(4, 7e-6, 80e9));
  EXPECT_NEAR(fit.intercept_s, 42e-6, 1e-12);
  const AlphaBeta ab = alpha_beta_from_all_reduce_fit(fit, 4);
  EXPECT_NEAR(ab.alpha_s, 7e-6, 1e-12);
  EXPECT_NEAR(ab.bus_bandwidth_Bps / 80e9, 1.0, 1e-9);
}

TEST(AlphaBetaFit, NegativeInterceptIsRefittedThroughTheOrigin) {
  // t = S / 1e9 - 1 us (a curve that would fit a negative latency) gives a = 0 and a slope
  // close to 1e-9 s/B.
  std::vector<CurvePoint> pts;
  for (double s = 1e5; s <= 1e8; s *= 10) pts.push_back(CurvePoint{s, s / 1e9 - 1e-6});
  const LinearFit fit = fit_time_vs_bytes(pts);
  EXPECT_EQ(fit.intercept_s, 0.0);
  EXPECT_NEAR(fit.slope_s_per_byte, 1e-9, 0.02e-9);
}

TEST(CollectiveCost, RingAllReduceMatchesTwoNMinusOneOverNFormula) {
  // n = 4, S = 100 MB, alpha = 10 us, busbw = 50 GB/s:
  // 2*3*10 us + 2*3/4 * 1e8 / 5e10 s = 60 us + 3 ms = 3.06 ms.
  const AlphaBeta ab{10e-6, 50e9};
  EXPECT_NEAR(ring_all_reduce_seconds(1e8, 4, ab), 3.06e-3, 1e-12);
  EXPECT_EQ(ring_all_reduce_seconds(1e8, 1, ab), 0.0);  // one rank exchanges nothing
}

TEST(CollectiveCost, TreeAndPipelinedBroadcastFormulas) {
  const AlphaBeta ab{10e-6, 50e9};
  // Tree on 8 ranks: 2*ceil(log2 8)*10 us + 2 * 1e8 / 5e10 = 60 us + 4 ms.
  EXPECT_NEAR(tree_all_reduce_seconds(1e8, 8, ab), 4.06e-3, 1e-12);
  // Broadcast on 4 ranks: 3*10 us + 1e8 / 5e10 = 30 us + 2 ms.
  EXPECT_NEAR(pipelined_broadcast_seconds(1e8, 4, ab), 2.03e-3, 1e-12);
}

TEST(CollectiveCost, BusBytesFollowNcclTestsConventions) {
  // all-reduce: 2(n-1)/n S = 2*3/4 * 1000 = 1500; broadcast, reduce: S; one rank: 0.
  EXPECT_DOUBLE_EQ(bus_bytes(CollectiveOp::kAllReduce, 1000, 4), 1500);
  EXPECT_DOUBLE_EQ(bus_bytes(CollectiveOp::kBroadcast, 1000, 4), 1000);
  EXPECT_DOUBLE_EQ(bus_bytes(CollectiveOp::kReduce, 1000, 4), 1000);
  EXPECT_DOUBLE_EQ(bus_bytes(CollectiveOp::kAllReduce, 1000, 1), 0);
}

CollectivesProfile two_rank_profile() {
  CollectivesProfile p;
  p.curves.push_back(CollectiveCurve{"all_reduce", 2, ring_curve(2, 5e-6, 20e9)});
  return p;
}

TEST(CollectiveModel, UsesTheMeasuredCurveForAMeasuredRankCount) {
  const CollectivesProfile p = two_rank_profile();
  const CollectiveModel model(p, std::nullopt);
  const CurvePoint& pt = p.curves[0].points[2];
  EXPECT_EQ(model.seconds(CollectiveOp::kAllReduce, 2, pt.bytes), pt.time_s);
  EXPECT_EQ(model.note(CollectiveOp::kAllReduce, 2), "");
}

TEST(CollectiveModel, FitsARingForAnUnmeasuredRankCount) {
  const CollectiveModel model(two_rank_profile(), std::nullopt);
  // From the 2-rank curve: alpha 5 us, busbw 20 GB/s; on 4 ranks, 1e8 B:
  // 2*3*5 us + 2*3/4 * 1e8 / 2e10 = 30 us + 7.5 ms.
  EXPECT_NEAR(model.seconds(CollectiveOp::kAllReduce, 4, 1e8), 7.53e-3, 1e-9);
  EXPECT_EQ(model.note(CollectiveOp::kAllReduce, 4),
            "all_reduce on 4 ranks: ring fit from 2-rank curve (alpha 5 us, busbw 20 GB/s)");
  // Broadcast without a curve of its own: pipelined ring with the all-reduce's alpha and busbw:
  // 3*5 us + 1e8 / 2e10 = 15 us + 5 ms.
  EXPECT_NEAR(model.seconds(CollectiveOp::kBroadcast, 4, 1e8), 5.015e-3, 1e-9);
}

TEST(CollectiveModel, OneRankCostsNothingUnlessMeasured) {
  CollectivesProfile p = two_rank_profile();
  EXPECT_EQ(CollectiveModel(p, std::nullopt).seconds(CollectiveOp::kAllReduce, 1, 1e6), 0.0);
  p.curves.push_back(CollectiveCurve{"all_reduce", 1, {{1e3, 2e-6}, {1e6, 30e-6}}});
  EXPECT_EQ(CollectiveModel(p, std::nullopt).seconds(CollectiveOp::kAllReduce, 1, 1e6), 30e-6);
}

TEST(CollectiveModel, AssumedInterconnectFillsGapsAndCanOverride) {
  const InterconnectAssumption assumed{/*bus_bandwidth_gbs=*/100, /*latency_us=*/2, false};
  // A profile without curves: the assumption prices a broadcast on 8 ranks as a pipelined ring,
  // 7*2 us + 1e9 / 1e11 s = 14 us + 10 ms.
  const CollectiveModel bare(CollectivesProfile{}, assumed);
  EXPECT_NEAR(bare.seconds(CollectiveOp::kBroadcast, 8, 1e9), 10.014e-3, 1e-9);
  EXPECT_NE(bare.note(CollectiveOp::kBroadcast, 8).find("assumed"), std::string::npos);
  // override_measured: the assumption wins over the measured 2-rank curve:
  // 2*1*2 us + 2*1/2 * 1e9 / 1e11 = 4 us + 10 ms.
  InterconnectAssumption override_all = assumed;
  override_all.override_measured = true;
  const CollectiveModel overridden(two_rank_profile(), override_all);
  EXPECT_NEAR(overridden.seconds(CollectiveOp::kAllReduce, 2, 1e9), 10.004e-3, 1e-9);
}

TEST(CollectiveModel, NothingToPriceWithIsAnError) {
  const CollectiveModel model(CollectivesProfile{}, std::nullopt);
  EXPECT_THROW(model.seconds(CollectiveOp::kAllReduce, 2, 1e6), std::invalid_argument);
}

}  // namespace
}  // namespace trainsim::hw

// NCCL's cost model (hw/nccl_model.h), against values computed by hand from its formulas.
namespace nccl {

using trainsim::hw::nccl_bus_factor;
using trainsim::hw::nccl_fastest;
using trainsim::hw::nccl_nvlink_gbs;
using trainsim::hw::nccl_pcie_gbs;
using trainsim::hw::nccl_seconds;
using trainsim::hw::nccl_parts;
using trainsim::hw::uplink_flows;
using trainsim::hw::NcclAlgorithm;
using trainsim::hw::NcclOp;
using trainsim::hw::NcclProtocol;
using trainsim::hw::NcclSystem;
using trainsim::hw::NcclTable;
using trainsim::hw::nccl_table;

// One node of 4 GPUs on PCIe Gen3 x16: NCCL rates the path 16 x 60 / 80 = 12 GB/s. With NCCL
// 2.7's constants unless told.
NcclSystem pcie4(NcclTable table = NcclTable::k2_7) {
  NcclSystem s;
  s.gpus_per_node = 4;
  s.intra_gbs = nccl_pcie_gbs(3, 16);
  s.nccl = table;
  return s;
}

TEST(NcclModel, AReleaseTakesTheNewestTableAtOrBeforeIt) {
  EXPECT_EQ(nccl_table({2, 4}), NcclTable::k2_7);  // before the cost model: the oldest table
  EXPECT_EQ(nccl_table({2, 6}), NcclTable::k2_7);
  EXPECT_EQ(nccl_table({2, 19}), NcclTable::k2_7);
  EXPECT_EQ(nccl_table({2, 20}), NcclTable::k2_20);
  EXPECT_EQ(nccl_table({2, 25}), NcclTable::k2_20);
  EXPECT_EQ(nccl_table({2, 26}), NcclTable::k2_26);
  EXPECT_EQ(nccl_table({2, 29}), NcclTable::k2_26);
  EXPECT_EQ(nccl_table({3, 0}), NcclTable::k2_26);
  EXPECT_EQ(NcclSystem{}.nccl, NcclTable::k2_26);  // the default: the newest
}

TEST(NcclModel, LinkRatingsAreNcclsTopologyFigures) {
  EXPECT_DOUBLE_EQ(nccl_pcie_gbs(3, 16), 12.0);   // 16 x 60 / 80
  EXPECT_DOUBLE_EQ(nccl_pcie_gbs(5, 16), 48.0);   // 16 x 240 / 80
  EXPECT_DOUBLE_EQ(nccl_nvlink_gbs(12, 8.0), 240.0);   // A100: 12 links x 20
  EXPECT_DOUBLE_EQ(nccl_nvlink_gbs(18, 9.0), 370.8);   // H100: 18 x 20.6
  EXPECT_DOUBLE_EQ(nccl_nvlink_gbs(4, 8.6), 48.0);     // GA102 bridge: 4 x 12
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kAllReduce, 4), 1.5);  // 2(n-1)/n
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kAllGather, 4), 0.75);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kBroadcast, 4), 1.0);
  EXPECT_DOUBLE_EQ(nccl_bus_factor(NcclOp::kBroadcast, 1), 0.0);  // the bytes one rank moves: none
}

// format/metrics.h: nccl-tests' factors (src/*.cu) as measure and every report print them.
TEST(Metrics, BusFactorsFollowNcclTests) {
  using trainsim::nccl_tests_bus_factor;
  EXPECT_DOUBLE_EQ(nccl_tests_bus_factor("all_reduce", 1), 0.0);
  EXPECT_DOUBLE_EQ(nccl_tests_bus_factor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(nccl_tests_bus_factor("all_reduce", 4), 1.5);
  EXPECT_DOUBLE_EQ(nccl_tests_bus_factor("all_gather", 4), 0.75);
  EXPECT_DOUBLE_EQ(nccl_tests_bus_factor("reduce_scatter", 8), 0.875);
  EXPECT_DOUBLE_EQ(nccl_tests_bus_factor("broadcast", 1), 1.0);
  EXPECT_DOUBLE_EQ(nccl_tests_bus_factor("reduce", 3), 1.0);
  EXPECT_THROW(nccl_tests_bus_factor("all_to_all", 2), std::invalid_argument);
  EXPECT_THROW(nccl_tests_bus_factor("all_reduce", 0), std::invalid_argument);
}

TEST(Metrics, ErrorsAreSignedAndRelativeToTheMeasurement) {
  EXPECT_DOUBLE_EQ(trainsim::relative_error(11.0, 10.0), 0.1);
  EXPECT_DOUBLE_EQ(trainsim::percent_error(8.0, 10.0), -20.0);
}

TEST(NcclModel, RingAllReduceOnOnePcieNode) {
  // Simple: algbw = 12 x 4 / 6 = 8 GB/s; latency 8.4 + 6 steps x 5.7 = 42.6 us.
  const double s = 134217728;
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, s, pcie4(), NcclAlgorithm::kRing, NcclProtocol::kSimple),
              42.6e-6 + s / 8e9, 1e-12);
  // LL: a quarter of the bandwidth, 12 / 4 x 4 / 6 = 2 GB/s; latency 3.6 + 6 x 1.0 = 9.6 us.
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, 8, pcie4(), NcclAlgorithm::kRing, NcclProtocol::kLL),
              9.6e-6 + 8 / 2e9, 1e-15);
  // LL128 runs only over NVLink; tree only for all-reduce.
  EXPECT_LT(nccl_seconds(NcclOp::kAllReduce, 8, pcie4(), NcclAlgorithm::kRing, NcclProtocol::kLL128), 0);
  EXPECT_LT(nccl_seconds(NcclOp::kBroadcast, 8, pcie4(), NcclAlgorithm::kTree, NcclProtocol::kSimple), 0);
  // One rank moves nothing.
  NcclSystem one = pcie4();
  one.gpus_per_node = 1;
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, 1e6, one).seconds, 0);
}

TEST(NcclModel, TheTunerSwitchesFromLlToSimpleWhereTheirTimesCross) {
  // LL 9.6 us + S / 2 GB/s against Simple 42.6 us + S / 8 GB/s: equal at S = 33 us / (1/2 - 1/8)
  // ns per byte = 88,000 bytes.
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, 64 * 1024, pcie4()).protocol, NcclProtocol::kLL);
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, 128 * 1024, pcie4()).protocol, NcclProtocol::kSimple);
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, 128 * 1024, pcie4()).algorithm, NcclAlgorithm::kRing);
}

TEST(NcclModel, Nccl226OnOnePcieNode) {
  const NcclSystem s = pcie4(NcclTable::k2_26);
  // Ring LL: base 6.6 + 6 steps x 1.0 = 12.6 us; half the bandwidth, 12 x 0.5 x 4 / 6 = 4 GB/s.
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, 8, s, NcclAlgorithm::kRing, NcclProtocol::kLL), 12.6e-6 + 8 / 4e9,
              1e-15);
  // Ring Simple as in 2.7: 8.4 + 6 x 5.7 = 42.6 us, 12 x 4 / 6 = 8 GB/s.
  const double big = 134217728;
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, s, NcclAlgorithm::kRing, NcclProtocol::kSimple),
              42.6e-6 + big / 8e9, 1e-12);
  // Tree LL: 6.8 + 2 (3 x 1.0) = 12.8 us; 12 x 0.92 / 3.8 x 1/2 GB/s.
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, 8, s, NcclAlgorithm::kTree, NcclProtocol::kLL),
              12.8e-6 + 8 / (12 * 0.92 / 3.8 * 0.5 * 1e9), 1e-15);
  // Tree Simple: 8.4 + 2 (3 x 4.0) = 32.4 us; 12 x 0.92 x 1/2 = 5.52 GB/s.
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, 4096, s, NcclAlgorithm::kTree, NcclProtocol::kSimple),
              32.4e-6 + 4096 / 5.52e9, 1e-15);
  // Broadcast's ring LL: half the bandwidth too (2.7: a third), 12 x 0.5 x 4 / 4 = 6 GB/s;
  // latency 6.6 + 4 steps x 1.0 = 10.6 us.
  EXPECT_NEAR(nccl_seconds(NcclOp::kBroadcast, 8, s, NcclAlgorithm::kRing, NcclProtocol::kLL), 10.6e-6 + 8 / 6e9,
              1e-15);
  // The tuner's pick at 8 B: ring LL (12.6 us against tree LL's 12.8).
  const auto t = nccl_fastest(NcclOp::kAllReduce, 8, s);
  EXPECT_EQ(t.algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(t.protocol, NcclProtocol::kLL);
}

TEST(NcclModel, TreeAcrossNodes) {
  // 2 nodes x 8 GPUs on NVLink: tree LL latency 4.4 + 2 ((8 - 1) x 0.52 x 1.8 + log2(2) x 5.0)
  // = 27.504 us; bandwidth min(0.9 x 240, 110) / 3.8 x 1/2.
  NcclSystem s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.nvlink = true;
  s.intra_gbs = 240;
  s.inter_gbs = 200;
  s.nccl = NcclTable::k2_7;
  const double bw = 110.0 / 3.8 * 0.5;
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, 4096, s, NcclAlgorithm::kTree, NcclProtocol::kLL),
              27.504e-6 + 4096 / (bw * 1e9), 1e-12);
  // Ring Simple across nodes: busbw min(240, 200) = 200, algbw 200 x 16 / 30; latency 8.4 +
  // (30 - 2) x 3.4 + 2 x 9.6 = 122.8 us, x1.9 at the plateau (S >= 16 / 16 x 64 KiB).
  const double big = 1 << 30;
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, s, NcclAlgorithm::kRing, NcclProtocol::kSimple),
              1.9 * 122.8e-6 + big / (200e9 * 16 / 30), 1e-9);
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, 8, s).algorithm, NcclAlgorithm::kTree);
}

TEST(NcclModel, Nccl220AcrossNodes) {
  // The same 2 nodes x 8 GPUs with NCCL 2.20's constants.
  NcclSystem s;
  s.nodes = 2;
  s.gpus_per_node = 8;
  s.nvlink = true;
  s.intra_gbs = 240;
  s.inter_gbs = 200;
  s.nccl = NcclTable::k2_20;
  // Tree LL: 6.8 + 2 ((8 - 1) x 0.6 x 1.8 + log2(2) x 5.0) = 31.92 us; no fixed cap, so
  // min(240, 200) x 0.92 / 3.8 x 1/2.
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, 4096, s, NcclAlgorithm::kTree, NcclProtocol::kLL),
              31.92e-6 + 4096 / (200 * 0.92 / 3.8 * 0.5 * 1e9), 1e-12);
  // Ring Simple: 2 x 2 = 4 network steps (2.20 counts 2 nodes), 30 - 4 = 26 NVLink steps:
  // 8.4 + 26 x 3.4 + 4 x 14.0 = 152.8 us, x1.9 at the plateau.
  const double big = 1 << 30;
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, s, NcclAlgorithm::kRing, NcclProtocol::kSimple),
              1.9 * 152.8e-6 + big / (200e9 * 16 / 30), 1e-9);
  // Ring LL128 with one GPU per node: x0.7 in 2.20 (x0.92 in 2.26). 2 nodes x 1 GPU: 2 steps,
  // which 2.20 counts as 4 network steps and 2 - 4 = -2 NVLink ones, as its formula does:
  // 14.0 - 2 x 1.9 + 4 x 4.0 = 26.2 us; algbw 200 x 0.7 x 2 / 2.
  s.gpus_per_node = 1;
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, s, NcclAlgorithm::kRing, NcclProtocol::kLL128),
              26.2e-6 + big / (200e9 * 0.7), 1e-9);
  s.nccl = NcclTable::k2_26;  // 2(2 - 1) = 2 network steps again: 14.0 + 2 x 4.0 = 22 us
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, s, NcclAlgorithm::kRing, NcclProtocol::kLL128),
              22e-6 + big / (200e9 * 0.92), 1e-9);
}

// One node of 8 H100 SXM on NVSwitch (18 NVLinks x 20.6 GB/s) with NVLink SHARP.
NcclSystem hgx_h100(int nodes = 1, double inter_gbs = 0) {
  NcclSystem s;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.nvlink = true;
  s.nvls = true;
  s.intra_gbs = nccl_nvlink_gbs(18, 9.0);
  s.inter_gbs = inter_gbs;
  return s;
}

TEST(NcclModel, NvlsOnOneNode) {
  // One channel per GPU; each GPU's NVLinks carry 2 + 7 channels: 370.8 / 9 = 41.2 GB/s, so the
  // search's speed is 40 (60 and 50 do not fit). algbw = 8 x 40 x 5/6 = 266.67 GB/s (nccl-tests
  // busbw x 14/8 = 466.7); latency 23 us.
  const NcclSystem s = hgx_h100();
  const double big = 1 << 30;
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, s, NcclAlgorithm::kNvls, NcclProtocol::kSimple),
              23e-6 + big / (8 * 40 * 5.0 / 6.0 * 1e9), 1e-12);
  // All-gather and reduce-scatter run NVLS on one node at the same rate; broadcast does not.
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllGather, big, s, NcclAlgorithm::kNvls, NcclProtocol::kSimple),
              23e-6 + big / (8 * 40 * 5.0 / 6.0 * 1e9), 1e-12);
  EXPECT_LT(nccl_seconds(NcclOp::kBroadcast, big, s, NcclAlgorithm::kNvls, NcclProtocol::kSimple), 0);
  EXPECT_LT(nccl_seconds(NcclOp::kAllReduce, big, s, NcclAlgorithm::kNvls, NcclProtocol::kLL128), 0);  // Simple only
  EXPECT_LT(nccl_seconds(NcclOp::kAllReduce, big, s, NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple), 0);
  // The tuner: ring LL for small messages (15 us < 23 us), NVLS for large ones (the ring's
  // Simple algbw is 370.8 x 8/14 = 211.9 GB/s).
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, 8, s).algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, big, s).algorithm, NcclAlgorithm::kNvls);
  // 2 GPUs: 370.8 / 3 allows the fastest speed, 60, but 2 channels x 60 x 5/6 = 100 GB/s is
  // below the ring's 370.8 x 2/2: the ring.
  NcclSystem two = s;
  two.gpus_per_node = 2;
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, two, NcclAlgorithm::kNvls, NcclProtocol::kSimple),
              23e-6 + big / 100e9, 1e-12);
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, big, two).algorithm, NcclAlgorithm::kRing);
  // No NVLS without NVLink SHARP, nor in 2.7's table.
  NcclSystem off = s;
  off.nvls = false;
  EXPECT_LT(nccl_seconds(NcclOp::kAllReduce, big, off, NcclAlgorithm::kNvls, NcclProtocol::kSimple), 0);
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, big, off).algorithm, NcclAlgorithm::kRing);
  NcclSystem old = s;
  old.nccl = NcclTable::k2_7;
  EXPECT_LT(nccl_seconds(NcclOp::kAllReduce, big, old, NcclAlgorithm::kNvls, NcclProtocol::kSimple), 0);
}

TEST(NcclModel, NvlsTreeAcrossNodes) {
  // 2 nodes, 8 x 200 Gb/s NICs each (200 GB/s a node, 25 per GPU): the speed is the fastest of
  // NCCL's inter-node speeds within 25 and 41.2: 24. algbw = 8 x 24 x 5/6 = 160 GB/s; latency
  // 23 + 2 x log2(2) x 14 = 51 us. NVLS alone does not span nodes.
  const double big = 1 << 30;
  const NcclSystem two = hgx_h100(2, 200);
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, two, NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple),
              51e-6 + big / 160e9, 1e-12);
  EXPECT_LT(nccl_seconds(NcclOp::kAllReduce, big, two, NcclAlgorithm::kNvls, NcclProtocol::kSimple), 0);
  EXPECT_LT(nccl_seconds(NcclOp::kAllGather, big, two, NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple), 0);
  // It beats the ring bound by the NICs (200 x 16/30 = 106.7 GB/s).
  EXPECT_EQ(nccl_fastest(NcclOp::kAllReduce, big, two).algorithm, NcclAlgorithm::kNvlsTree);
  // 4 nodes: half the speed per channel (80 GB/s), latency 23 + 2 x 2 x 14 = 79 us.
  const NcclSystem four = hgx_h100(4, 200);
  EXPECT_NEAR(nccl_seconds(NcclOp::kAllReduce, big, four, NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple),
              79e-6 + big / 80e9, 1e-12);
}

// One node of 8 GPUs of 18 NVLinks and compute capability 9.0 on NVSwitches, as a topology.
trainsim::Topology hgx_h100_topology() {
  trainsim::Topology t;
  t.gpus_per_node = 8;
  t.fabric = trainsim::Fabric::kNvswitch;
  t.gpu.link.nvlink_links = 18;
  t.gpu.compute_capability = 9.0;
  return t;
}

TEST(NcclModel, NvlinkSharpNeedsNvswitchesAndComputeCapability9) {
  trainsim::Topology t = hgx_h100_topology();
  EXPECT_TRUE(trainsim::hw::nccl_cluster(t).nvls);
  EXPECT_TRUE(trainsim::hw::nccl_cluster(t).system(8).nvls);
  t.gpu.compute_capability = 8.0;  // A100 on NVSwitch
  EXPECT_FALSE(trainsim::hw::nccl_cluster(t).nvls);
  t.gpu.compute_capability.reset();  // unknown: not assumed
  EXPECT_FALSE(trainsim::hw::nccl_cluster(t).nvls);
  t.gpu.compute_capability = 9.0;
  t.fabric = trainsim::Fabric::kNvlinkMesh;
  EXPECT_FALSE(trainsim::hw::nccl_cluster(t).nvls);
}

// Peer-to-peer off under one PCIe switch: the GPUs' paths to host memory share the switch's link.
TEST(NcclModel, GpusUnderOneSwitchShareItsLinkThroughHostMemory) {
  trainsim::Topology t;
  t.gpus_per_node = 2;
  t.fabric = trainsim::Fabric::kPcie;
  t.gpu.link.pcie_generation = 3;
  t.gpu.link.pcie_lanes = 16;
  t.p2p = false;
  const double big = 1 << 30;
  const auto simple_ring = [&](NcclOp op) {
    return nccl_seconds(op, big, trainsim::hw::nccl_cluster(t).system(2), NcclAlgorithm::kRing, NcclProtocol::kSimple);
  };
  const double own_paths_all_reduce = simple_ring(NcclOp::kAllReduce);
  const double own_paths_broadcast = simple_ring(NcclOp::kBroadcast);
  t.pcie_switches = 1;
  const trainsim::hw::NcclSystem shared = trainsim::hw::nccl_cluster(t).system(2);
  EXPECT_EQ(shared.gpus_per_uplink, 2);
  // Both GPUs send and receive at once in a ring: the link carries 2 transfers each way, so the
  // 1 GiB transfer takes twice as long (12 GB/s for Gen3 x16, 6 each); the broadcast's chain 1.
  EXPECT_EQ(uplink_flows(NcclOp::kAllReduce, shared), 2);
  EXPECT_EQ(uplink_flows(NcclOp::kAllGather, shared), 2);
  EXPECT_EQ(uplink_flows(NcclOp::kBroadcast, shared), 1);
  const auto transfer = [&](NcclOp op, const trainsim::hw::NcclSystem& s) {
    return nccl_parts(op, big, s, NcclAlgorithm::kRing, NcclProtocol::kSimple).transfer_s;
  };
  EXPECT_NEAR(transfer(NcclOp::kAllReduce, shared), big / (6e9 * 2.0 / 2.0), 1e-9);
  EXPECT_GT(simple_ring(NcclOp::kAllReduce), 1.9 * own_paths_all_reduce);
  EXPECT_DOUBLE_EQ(simple_ring(NcclOp::kBroadcast), own_paths_broadcast);
  // 8 GPUs on 2 switches of 4: 4 transfers each way, for the chain too (a switch in its middle).
  t.gpus_per_node = 8;
  t.pcie_switches = 2;
  const trainsim::hw::NcclSystem two_switches = trainsim::hw::nccl_cluster(t).system(8);
  EXPECT_EQ(uplink_flows(NcclOp::kAllReduce, two_switches), 4);
  EXPECT_EQ(uplink_flows(NcclOp::kBroadcast, two_switches), 4);
  // 3 of the 8 ranks fill one switch first: 3 transfers.
  EXPECT_EQ(uplink_flows(NcclOp::kAllReduce, trainsim::hw::nccl_cluster(t).system(3)), 3);
  // Peer-to-peer on: the switch carries GPU-to-GPU traffic itself.
  t.p2p = true;
  EXPECT_EQ(trainsim::hw::nccl_cluster(t).system(8).gpus_per_uplink, 1);
}

// NCCL_ALGO (topology nccl_algo:): the tuner chooses among the algorithms it allows only.
TEST(NcclModel, NcclAlgoRestrictsTheTunersChoice) {
  trainsim::Topology t = hgx_h100_topology();
  const double big = 1 << 30;
  EXPECT_EQ(trainsim::hw::nccl_cluster(t).time(NcclOp::kAllReduce, big, 8).algorithm, NcclAlgorithm::kNvls);
  t.nccl_algo = {"ring"};
  const trainsim::hw::NcclCluster ring_only = trainsim::hw::nccl_cluster(t);
  EXPECT_TRUE(ring_only.system(8).allows(NcclAlgorithm::kRing));
  EXPECT_FALSE(ring_only.system(8).allows(NcclAlgorithm::kNvls));
  EXPECT_EQ(ring_only.time(NcclOp::kAllReduce, big, 8).algorithm, NcclAlgorithm::kRing);
  EXPECT_EQ(ring_only.time(NcclOp::kAllReduce, big, 8).seconds,
            nccl_seconds(NcclOp::kAllReduce, big, ring_only.system(8), NcclAlgorithm::kRing, NcclProtocol::kSimple));
  t.nccl_algo = {"ring", "tree"};
  EXPECT_TRUE(trainsim::hw::nccl_cluster(t).system(8).allows(NcclAlgorithm::kTree));
  EXPECT_FALSE(trainsim::hw::nccl_cluster(t).system(8).allows(NcclAlgorithm::kNvlsTree));
}

// A cluster's own log calibrating the model (hw/nccl_calibration.h).
using trainsim::CurvePoint;
using trainsim::hw::bounding_link;
using trainsim::hw::fit_nccl_calibration;
using trainsim::hw::LinkClass;
using trainsim::hw::nccl_calibrated;
using trainsim::hw::NcclCalibration;

// A synthetic log: the model on `s` priced with `c`, at 8 B .. 128 MiB by x4.
std::vector<CurvePoint> synthetic_log(const NcclSystem& s, const NcclCalibration& c) {
  std::vector<CurvePoint> log;
  for (double bytes = 8; bytes <= 134217728; bytes *= 4) {
    log.push_back({bytes, nccl_calibrated(NcclOp::kAllReduce, bytes, s, c).seconds});
  }
  return log;
}

TEST(NcclCalibration, PricesNcclsChoiceWithTheClustersOwnTerms) {
  const NcclSystem s = pcie4();
  NcclCalibration c;
  c.overhead_s = 20e-6;
  c.latency_scale = 2;
  c.bandwidth_scale = 0.5;
  // 8 B: ring LL, 9.6 us + 8 B / 2 GB/s: 20 + 2 x 9.6 us + 8 B / 1 GB/s.
  EXPECT_NEAR(nccl_calibrated(NcclOp::kAllReduce, 8, s, c).seconds, 20e-6 + 19.2e-6 + 8e-9, 1e-15);
  // NCCL still chooses by its own model: LL up to 88,000 bytes although the calibrated times of LL
  // and Simple would cross elsewhere.
  EXPECT_EQ(nccl_calibrated(NcclOp::kAllReduce, 64 * 1024, s, c).protocol, NcclProtocol::kLL);
  EXPECT_EQ(nccl_calibrated(NcclOp::kAllReduce, 128 * 1024, s, c).protocol, NcclProtocol::kSimple);
  // One rank still moves nothing.
  NcclSystem one = s;
  one.gpus_per_node = 1;
  EXPECT_EQ(nccl_calibrated(NcclOp::kAllReduce, 1e6, one, c).seconds, 0);
}

TEST(NcclCalibration, AFitReproducesTheLogItWasMadeFrom) {
  const NcclSystem s = pcie4(NcclTable::k2_26);
  NcclCalibration truth;
  truth.overhead_s = 31e-6;
  truth.latency_scale = 1.4;
  truth.bandwidth_scale = 0.6;
  const NcclCalibration fit = fit_nccl_calibration(NcclOp::kAllReduce, s, synthetic_log(s, truth));
  EXPECT_NEAR(fit.overhead_s, truth.overhead_s, 1e-9);
  EXPECT_NEAR(fit.latency_scale, truth.latency_scale, 1e-6);
  EXPECT_NEAR(fit.bandwidth_scale, truth.bandwidth_scale, 1e-6);
  EXPECT_EQ(fit.points, 13);  // 8 B .. 128 MiB by x4
  EXPECT_NEAR(fit.rms_relative_error, 0, 1e-9);
  EXPECT_EQ(fit.link, LinkClass::kIntraNode);
}

TEST(NcclCalibration, NoTermGoesNegative) {
  // A log faster than any latency NCCL's model allows: the latency terms stay at zero.
  const NcclSystem s = pcie4(NcclTable::k2_26);
  std::vector<CurvePoint> log;
  for (double bytes = 8; bytes <= 134217728; bytes *= 4) {
    log.push_back({bytes, 0.1e-6 + nccl_fastest(NcclOp::kAllReduce, bytes, s).parts.transfer_s / 2});
  }
  const NcclCalibration fit = fit_nccl_calibration(NcclOp::kAllReduce, s, log);
  EXPECT_GE(fit.overhead_s, 0);
  EXPECT_GE(fit.latency_scale, 0);
  EXPECT_GT(fit.bandwidth_scale, 1.5);
  EXPECT_THROW(fit_nccl_calibration(NcclOp::kAllReduce, s, {{8, 1e-5}, {16, 1e-5}}), std::invalid_argument);
}

TEST(NcclCalibration, TheBandwidthScaleRatesOnlyTheLinkTheLogSaw) {
  NcclSystem node = pcie4();
  NcclSystem nodes = node;
  nodes.nodes = 4;
  nodes.inter_gbs = 6;  // one NIC slower than the PCIe path: the ring is bound by the network
  NcclSystem one_per_node = nodes;
  one_per_node.gpus_per_node = 1;
  one_per_node.inter_gbs = 50;  // faster than PCIe, but no PCIe hop is left in the ring
  EXPECT_EQ(bounding_link(node), LinkClass::kIntraNode);
  EXPECT_EQ(bounding_link(nodes), LinkClass::kInterNode);
  EXPECT_EQ(bounding_link(one_per_node), LinkClass::kInterNode);
  NcclCalibration c;  // fitted on one node
  c.bandwidth_scale = 0.5;
  const double big = 1 << 30;
  EXPECT_DOUBLE_EQ(nccl_calibrated(NcclOp::kAllReduce, big, node, c).parts.transfer_s,
                   2 * nccl_fastest(NcclOp::kAllReduce, big, node).parts.transfer_s);
  EXPECT_DOUBLE_EQ(nccl_calibrated(NcclOp::kAllReduce, big, nodes, c).parts.transfer_s,
                   nccl_fastest(NcclOp::kAllReduce, big, nodes).parts.transfer_s);
  EXPECT_DOUBLE_EQ(nccl_calibrated(NcclOp::kBroadcast, big, node, c).parts.transfer_s,
                   2 * nccl_fastest(NcclOp::kBroadcast, big, node).parts.transfer_s);
}

TEST(NcclCalibration, AClustersLogPricesItsRankCountAndCalibratesTheRest) {
  // A one-node cluster of 4 PCIe GPUs whose log ran twice as slow as NCCL's model, 10 us later.
  trainsim::hw::NcclCluster cluster;
  cluster.gpus_per_node = 4;
  cluster.intra_gbs = nccl_pcie_gbs(3, 16);
  cluster.nccl = NcclTable::k2_7;
  cluster.name = "test cluster";
  NcclCalibration truth;
  truth.overhead_s = 10e-6;
  truth.bandwidth_scale = 0.5;
  trainsim::CollectiveCurve log{"all_reduce", 4, synthetic_log(cluster.system(4), truth)};
  cluster.log = log;
  cluster.calibration = fit_nccl_calibration(NcclOp::kAllReduce, cluster.system(4), log.points);
  const trainsim::hw::CollectiveModel model(trainsim::CollectivesProfile{}, std::nullopt,
                                            trainsim::hw::AllReduceAlgorithm::kRing, cluster);
  using trainsim::hw::CollectiveOp;
  // The log's own rank count: the log, interpolated.
  EXPECT_NEAR(model.seconds(CollectiveOp::kAllReduce, 4, log.points[3].bytes), log.points[3].time_s, 1e-12);
  // Another rank count and another op: the calibrated model, DDP's all-reduce launched by a
  // process per GPU, DataParallel's broadcast by one process for its 3 GPUs.
  EXPECT_NEAR(model.seconds(CollectiveOp::kAllReduce, 2, 1e6),
              nccl_calibrated(NcclOp::kAllReduce, 1e6, cluster.system(2), truth, 1).seconds, 1e-9);
  EXPECT_NEAR(model.seconds(CollectiveOp::kBroadcast, 3, 1e6),
              nccl_calibrated(NcclOp::kBroadcast, 1e6, cluster.system(3), truth, 3).seconds, 1e-9);
  EXPECT_NE(model.note(CollectiveOp::kBroadcast, 3).find("calibrated by the cluster's nccl-tests log: overhead 10.0 us"),
            std::string::npos);
  // A log run with one thread for its 4 GPUs: DDP's all-reduce (a process per GPU) on its rank
  // count is the calibrated model with one launch, not the log's curve with its 4.
  trainsim::hw::NcclCluster one_thread = cluster;
  one_thread.log->gpus_per_thread = 4;
  one_thread.calibration->gpus_per_thread = 4;
  const trainsim::hw::CollectiveModel ddp(trainsim::CollectivesProfile{}, std::nullopt,
                                          trainsim::hw::AllReduceAlgorithm::kRing, one_thread);
  EXPECT_NEAR(ddp.seconds(CollectiveOp::kAllReduce, 4, 1e6),
              nccl_calibrated(NcclOp::kAllReduce, 1e6, cluster.system(4), *one_thread.calibration, 1).seconds, 1e-9);
}

// A log run with one thread driving its GPUs (nGpus 4): its per-call overhead is 4 launches, and
// a call launching g GPUs pays g / 4 of it; 0 prices the call as the log ran.
TEST(NcclCalibration, TheOverheadScalesWithTheGpusOneThreadLaunches) {
  const NcclSystem s = pcie4();
  NcclCalibration c;
  c.overhead_s = 20e-6;
  c.gpus_per_thread = 4;
  const double bytes = 8;
  const double model = nccl_fastest(NcclOp::kAllReduce, bytes, s).seconds;
  EXPECT_NEAR(nccl_calibrated(NcclOp::kAllReduce, bytes, s, c).seconds, model + 20e-6, 1e-12);
  EXPECT_NEAR(nccl_calibrated(NcclOp::kAllReduce, bytes, s, c, 4).seconds, model + 20e-6, 1e-12);
  EXPECT_NEAR(nccl_calibrated(NcclOp::kAllReduce, bytes, s, c, 1).seconds, model + 5e-6, 1e-12);
  EXPECT_NEAR(nccl_calibrated(NcclOp::kAllReduce, bytes, s, c, 8).seconds, model + 40e-6, 1e-12);
}

}  // namespace nccl
