"""CIFAR-10 binary reading (measure/pytorch/cifar_data.py) and synthetic files (synthetic.py),
on small files the tests write themselves."""

import hashlib
import os
import unittest

import numpy as np
import pytorch_test_util as util
import torch

import cifar_data
import synthetic


def plane_image():
    """CHW bytes of an image whose planes differ: R = 10, G = row, B = 100 + column."""
    image = np.empty((3, 32, 32), dtype=np.uint8)
    image[0] = 10
    image[1] = np.arange(32).reshape(32, 1)
    image[2] = 100 + np.arange(32).reshape(1, 32)
    return image.tobytes()


def flat_image(value):
    return bytes([value]) * 3072


class CifarFilesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = util.TempDir()
        self.dir = self.tmp.__enter__()

    def tearDown(self):
        self.tmp.__exit__(None, None, None)

    def write_train_set(self):
        # data_batch_k.bin holds two images of value 10k and 10k + 1, labels k, k + 5 (mod 10).
        for k in range(1, 6):
            util.write_records(os.path.join(self.dir, "data_batch_%d.bin" % k),
                               [k % 10, (k + 5) % 10], [flat_image(10 * k), flat_image(10 * k + 1)])
        util.write_records(os.path.join(self.dir, "test_batch.bin"), [3], [plane_image()])

    def test_pixel_layout_is_planes_to_nhwc(self):
        self.write_train_set()
        ds = cifar_data.CIFAR10Binary(self.dir, train=False)
        self.assertEqual(ds.data.shape, (1, 32, 32, 3))
        self.assertEqual(ds.data.dtype, np.uint8)
        self.assertEqual(ds.targets, [3])
        img, label = ds[0]
        self.assertEqual(label, 3)
        pixels = np.array(img)  # PIL image, as torchvision's CIFAR10 hands it to the transform
        self.assertEqual(pixels.shape, (32, 32, 3))
        for y, x in [(0, 0), (5, 7), (31, 30)]:
            self.assertEqual(list(pixels[y, x]), [10, y, 100 + x])

    def test_test_transform_normalises_each_channel(self):
        self.write_train_set()
        ds = cifar_data.CIFAR10Binary(self.dir, train=False, transform=cifar_data.test_transform())
        tensor, _ = ds[0]
        self.assertEqual(tuple(tensor.shape), (3, 32, 32))
        y, x = 4, 9
        expected = [(10 / 255 - 0.4914) / 0.2023, (y / 255 - 0.4822) / 0.1994,
                    ((100 + x) / 255 - 0.4465) / 0.2010]
        for c in range(3):
            self.assertAlmostEqual(tensor[c, y, x].item(), expected[c], places=5)

    def test_train_files_in_order_and_limit(self):
        self.write_train_set()
        ds = cifar_data.CIFAR10Binary(self.dir, train=True)
        self.assertEqual(len(ds), 10)
        self.assertEqual(ds.targets, [1, 6, 2, 7, 3, 8, 4, 9, 5, 0])
        self.assertEqual([int(ds.data[i, 0, 0, 0]) for i in range(10)],
                         [10, 11, 20, 21, 30, 31, 40, 41, 50, 51])
        self.assertFalse(ds.synthetic)
        first = cifar_data.CIFAR10Binary(self.dir, train=True, limit=3)
        self.assertEqual(first.targets, [1, 6, 2])
        with self.assertRaises(cifar_data.DataError) as e:
            cifar_data.CIFAR10Binary(self.dir, train=True, limit=11)
        self.assertIn("11 training images requested, only 10 available", str(e.exception))

    def test_train_transform_and_loader_batch(self):
        self.write_train_set()
        ds = cifar_data.CIFAR10Binary(self.dir, train=True, transform=cifar_data.train_transform())
        loader = cifar_data.train_loader(ds, 4, 0, generator=cifar_data.seeded_generator(0))
        images, labels = next(iter(loader))
        self.assertEqual(tuple(images.shape), (4, 3, 32, 32))
        self.assertEqual(images.dtype, torch.float32)
        self.assertEqual(labels.dtype, torch.int64)
        self.assertEqual(len(loader), 3)  # 10 images, last batch partial

    def test_missing_file(self):
        self.write_train_set()
        os.remove(os.path.join(self.dir, "data_batch_4.bin"))
        with self.assertRaises(cifar_data.DataError) as e:
            cifar_data.CIFAR10Binary(self.dir, train=True)
        self.assertRegex(str(e.exception), r"data_batch_4\.bin: missing")

    def test_empty_file(self):
        self.write_train_set()
        open(os.path.join(self.dir, "data_batch_2.bin"), "wb").close()
        with self.assertRaises(cifar_data.DataError) as e:
            cifar_data.CIFAR10Binary(self.dir, train=True)
        self.assertRegex(str(e.exception), r"data_batch_2\.bin: empty")

    def test_truncated_file_names_the_record(self):
        self.write_train_set()
        path = os.path.join(self.dir, "test_batch.bin")
        util.write_records(path, [1, 2, 3], [flat_image(0)] * 3)
        with open(path, "ab") as f:
            f.write(b"\x01" * 5)
        with self.assertRaises(cifar_data.DataError) as e:
            cifar_data.CIFAR10Binary(self.dir, train=False)
        self.assertEqual(str(e.exception), "%s: truncated: %d bytes is not a multiple of 3073 "
                         "(record 3 is incomplete)" % (path, 3 * 3073 + 5))

    def test_bad_label_names_file_and_record(self):
        self.write_train_set()
        path = os.path.join(self.dir, "data_batch_3.bin")
        util.write_records(path, [4, 9, 12], [flat_image(1)] * 3)
        with self.assertRaises(cifar_data.DataError) as e:
            cifar_data.CIFAR10Binary(self.dir, train=True)
        self.assertEqual(str(e.exception), "%s: record 2: label 12 out of range 0..9" % path)


class SyntheticTest(unittest.TestCase):
    def test_bit_identical_to_the_cpp_generator(self):
        # sha256 of the first 16 records of the C++ trainsim::data::synthetic_cifar10(n, 7)
        # written by write_cifar10_file (image i depends only on seed and i).
        images, labels = synthetic.synthetic_cifar10(16, 7)
        records = np.concatenate([labels.reshape(-1, 1), images.reshape(16, 3072)], axis=1)
        self.assertEqual(list(records[0, :8]), [1, 130, 158, 228, 207, 114, 105, 217])
        self.assertEqual(hashlib.sha256(records.astype(np.uint8).tobytes()).hexdigest(),
                         "99718cd54ee14fa57f5a5970b670a7992fc419bbb8eb23878c481550f2af6840")

    def test_folder_is_marked_and_readable(self):
        with util.TempDir() as d:
            synthetic.write_synthetic(d, train=23, test=4, seed=3)
            self.assertTrue(cifar_data.is_synthetic(d))
            sizes = [os.path.getsize(os.path.join(d, n)) // 3073 for n in cifar_data.TRAIN_FILES]
            self.assertEqual(sizes, [5, 5, 5, 4, 4])
            train = cifar_data.CIFAR10Binary(d, train=True)
            test = cifar_data.CIFAR10Binary(d, train=False)
            self.assertTrue(train.synthetic)
            self.assertEqual((len(train), len(test)), (23, 4))
            images, labels = synthetic.synthetic_cifar10(23, 3)
            self.assertEqual(train.targets, [int(v) for v in labels])
            np.testing.assert_array_equal(train.data, images.transpose(0, 2, 3, 1))


if __name__ == "__main__":
    unittest.main()
