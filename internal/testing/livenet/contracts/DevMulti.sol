// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC1155} from "@openzeppelin/contracts/token/ERC1155/ERC1155.sol";
import {ERC1155URIStorage} from "@openzeppelin/contracts/token/ERC1155/extensions/ERC1155URIStorage.sol";
import {ERC1155Burnable} from "@openzeppelin/contracts/token/ERC1155/extensions/ERC1155Burnable.sol";
import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

// DevMulti is an ERC-1155 with per-id URIs (empty base URI), owner-only mints and holder burns.
contract DevMulti is ERC1155, ERC1155URIStorage, ERC1155Burnable, Ownable {
    string public name;
    string public symbol;

    constructor(string memory name_, string memory symbol_, address owner_) ERC1155("") Ownable(owner_) {
        name = name_;
        symbol = symbol_;
    }

    function mint(address to, uint256 id, uint256 amount, string calldata tokenURI) external onlyOwner {
        _mint(to, id, amount, "");
        if (bytes(tokenURI).length > 0) {
            _setURI(id, tokenURI);
        }
    }

    function mintBatch(address to, uint256[] calldata ids, uint256[] calldata amounts) external onlyOwner {
        _mintBatch(to, ids, amounts, "");
    }

    function uri(uint256 id) public view override(ERC1155, ERC1155URIStorage) returns (string memory) {
        return super.uri(id);
    }
}
