"""Product quantization (core/words/product_quantizer.py): the compact form of shipped vectors."""
from __future__ import annotations

import pytest
import torch

from core.words.product_quantizer import decode, fit_codes


def test_rows_fewer_than_the_centroids_come_back_as_they_were():
    x = torch.randn(40, 12)
    codes, codebooks = fit_codes(x, subspaces=4)
    assert codes.shape == (40, 4) and codes.dtype == torch.uint8
    assert codebooks.shape == (4, 40, 3) and codebooks.dtype == torch.float16  # one centroid a row
    torch.testing.assert_close(decode(codes, codebooks), x, atol=2e-3, rtol=2e-3)  # float16 centroids


def test_many_rows_are_approximated_by_their_nearest_centroids():
    centres = torch.randn(8, 16) * 5
    x = centres[torch.arange(2000) % 8] + 0.01 * torch.randn(2000, 16)  # 8 clusters
    codes, codebooks = fit_codes(x, subspaces=4, seed=1)
    assert codebooks.shape == (4, 256, 4)
    error = (decode(codes, codebooks) - x).norm(dim=1) / x.norm(dim=1)
    assert error.max() < 0.05
    again = fit_codes(x, subspaces=4, seed=1)
    assert torch.equal(codes, again[0]) and torch.equal(codebooks, again[1])  # the seed decides


def test_subspaces_must_divide_the_width():
    with pytest.raises(ValueError, match="do not divide"):
        fit_codes(torch.randn(10, 12), subspaces=5)


def test_rows_are_assigned_in_blocks_as_all_at_once():
    from core.words.product_quantizer import NEAREST_BLOCK, _nearest

    x, centroids = torch.randn(2 * NEAREST_BLOCK + 3, 6), torch.randn(256, 6)  # two whole blocks and a part
    nearest = _nearest(x[:, 1:4], centroids[:, :3])  # a slice of the rows' width, as fit_codes passes them
    assert torch.equal(nearest, torch.cdist(x[:, 1:4], centroids[:, :3]).argmin(dim=1))
